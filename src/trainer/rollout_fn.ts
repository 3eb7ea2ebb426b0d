/**
 * The controller's rollout functions. By default every (prompt, sample) is one request to the
 * continuous-batching engine (src/rollout/engine.ts): the n samples of a prompt share its prefill,
 * each draws with a seed of its own (so its tokens do not depend on what runs beside it), and
 * a finished response's slot goes to the next at once; the pool is sized by
 * `rollout.max_num_seqs` and `rollout.kv_cache_tokens` (enginePoolBlocks). `engine: null` decodes
 * with `generate`'s lock-step batches instead. The agent loop's turns go through the same engine
 * (turnRolloutFor), one request per conversation turn.
 *
 * A LoRA actor decodes a copy of its adapted matrices with the adapters merged in, rebuilt per
 * call: cheaper than the adapters' extra products in every decode step (README, LoRA); with
 * `precision.f16Weights` that copy (of every matrix then) is f16 (CausalLM.forRollout).
 * `mergeLora: false` decodes the model as it is, through the adapters, in its own dtypes.
 */
import type { Tokenizer } from "../io/mod.ts";
import type { CausalLM, KvDtype } from "../nn/mod.ts";
import {
  ConfigError,
  ENGINE_MAX_NUM_SEQS,
  enginePoolOptions,
  type EngineSettings,
  type RolloutDtype,
} from "../config/mod.ts";
import {
  Engine,
  ENGINE_BATCH_STEPS_IN_FLIGHT,
  engineTurns,
  generate,
  prefixCacheMetrics,
  responseRows,
  submitPrompts,
} from "../rollout/mod.ts";
import { gpu } from "../gpu/mod.ts";
import type {
  RolloutFn,
  RolloutOptions,
  RolloutOutput,
  RolloutPrompts,
  TurnRolloutFn,
} from "./parts.ts";

/** What `rollout.dtype` asks of the rollout on this GPU. */
export interface RolloutPrecision {
  /** Element type of the KV cache. */
  kvDtype: KvDtype;
  /** Decode with f16 matrices (a per-call copy when the model's are f32). */
  f16Weights: boolean;
}

/**
 * `rollout.dtype` on this GPU: float16 is an f16 KV cache on any adapter, and f16 weights where
 * the GPU has shader-f16; without it the weights stay f32 and `notice` hears one line saying so.
 * `headDim` (when the model is known): float16 needs a head size that is a multiple of 4.
 */
export function rolloutPrecision(
  dtype: RolloutDtype,
  o: { key: string; headDim?: number; notice: (line: string) => void },
): RolloutPrecision {
  if (dtype === "float32") return { kvDtype: "f32", f16Weights: false };
  if (dtype === "bfloat16") {
    o.notice(`${o.key}=bfloat16: WebGPU has no bfloat16, so the rollout runs float16`);
  }
  if (o.headDim !== undefined) checkHalfCache(o.key, o.headDim);
  const f16Weights = gpu().hasF16;
  if (!f16Weights) {
    o.notice(
      `${o.key}=float16: this GPU has no shader-f16, so the rollout decodes f32 weights ` +
        "(with an f16 KV cache)",
    );
  }
  return { kvDtype: "f16", f16Weights };
}

/** rollout.dtype=float16 with a model of head size `headDim`: its KV cache packs halves by 4. */
export function checkHalfCache(key: string, headDim: number): void {
  if (headDim % 4 === 0) return;
  throw new ConfigError(
    key,
    `${key}=float16 needs a head size that is a multiple of 4 (its KV cache packs halves); ` +
      `this model's is ${headDim}: use float32`,
  );
}

/** The engine's settings (rollout.*), with `key` naming kv_cache_tokens in errors. */
export type EnginePool = EngineSettings & { key: string };

export interface RolloutForOptions {
  mergeLora?: boolean;
  precision?: RolloutPrecision;
  /** The engine's pool (default 1024 sequences, room for all); null: `generate`'s batches. */
  engine?: EnginePool | null;
}

const DEFAULT_POOL: EnginePool = {
  maxNumSeqs: ENGINE_MAX_NUM_SEQS,
  kvCacheTokens: null,
  key: "actor_rollout_ref.rollout.kv_cache_tokens",
  prefixCaching: true,
};

const F32: RolloutPrecision = { kvDtype: "f32", f16Weights: false };

/** Runs `fn` with the model the rollout decodes (see the module doc), freed after. */
async function withRolloutModel<T>(
  model: CausalLM,
  options: RolloutForOptions,
  fn: (m: CausalLM) => Promise<T>,
): Promise<T> {
  const f16Weights = (options.precision ?? F32).f16Weights;
  const copy = options.mergeLora === false ? model : model.forRollout({ f16Weights });
  try {
    return await fn(copy);
  } finally {
    if (copy !== model) copy.dispose();
  }
}

export function rolloutFor(
  model: CausalLM,
  tokenizer: Tokenizer,
  eosTokenIds: number[] = [tokenizer.eosTokenId],
  options: RolloutForOptions = {},
): RolloutFn {
  const kvDtype = (options.precision ?? F32).kvDtype;
  const pool = options.engine === undefined ? DEFAULT_POOL : options.engine;
  return (prompts, o) =>
    withRolloutModel(model, options, async (m) => {
      if (pool) {
        return await engineRollout(m, { tokenizer, eosTokenIds, options, pool, prompts, o });
      }
      const out = await generate(m, {
        inputIds: prompts.inputIds,
        attentionMask: prompts.attentionMask,
        batch: prompts.batch,
        promptLength: prompts.promptLength,
        n: o.n,
        responseLength: o.responseLength,
        temperature: o.temperature,
        topK: o.topK,
        topP: o.topP,
        doSample: o.doSample,
        eosTokenIds,
        padTokenId: tokenizer.padTokenId,
        seed: o.seed,
        returnLogProbs: o.returnLogProbs ?? false,
        onProgress: o.onProgress,
        kvDtype,
      });
      return { responses: out.responses, responseMask: out.responseMask, logProbs: out.logProbs };
    });
}

/** The agent loop's engine: one per batch of conversations, one request per turn. */
export function turnRolloutFor(
  model: CausalLM,
  tokenizer: Tokenizer,
  eosTokenIds: number[] = [tokenizer.eosTokenId],
  options: RolloutForOptions = {},
): TurnRolloutFn {
  if (options.engine === null) {
    throw new Error(
      "turnRolloutFor: the agent loop decodes through the engine; engine: null (lock-step " +
        "generate batches) is rolloutFor's option only",
    );
  }
  const pool = options.engine ?? DEFAULT_POOL;
  return (o, use) =>
    withRolloutModel(model, options, async (m) => {
      const need = { sequences: o.conversations, longest: o.longest };
      const engine = new Engine(
        m,
        engineOptions({ tokenizer, eosTokenIds, options, pool }, o, need),
      );
      try {
        const turns = engineTurns(engine, { seed: o.seed, returnLogProbs: o.returnLogProbs });
        return await use(turns, () => prefixCacheMetrics(engine));
      } finally {
        await engine.close();
      }
    });
}

function engineOptions(
  c: { tokenizer: Tokenizer; eosTokenIds: number[]; options: RolloutForOptions; pool: EnginePool },
  o: Pick<RolloutOptions, "temperature" | "topK" | "topP" | "doSample">,
  need: { sequences: number; longest: number },
) {
  return {
    ...enginePoolOptions(c.pool, need),
    kvDtype: (c.options.precision ?? F32).kvDtype,
    eosTokenIds: c.eosTokenIds,
    padTokenId: c.tokenizer.padTokenId,
    sampling: { temperature: o.temperature, topK: o.topK, topP: o.topP, doSample: o.doSample },
  };
}

/** Each row's prompt tokens: the run of 1s that ends the row's mask (left padding). */
function promptRows(p: RolloutPrompts): Int32Array[] {
  const P = p.promptLength;
  return Array.from({ length: p.batch }, (_, b) => {
    const mask = p.attentionMask.subarray(b * P, b * P + P);
    const start = mask.indexOf(1);
    if (start < 0 || mask.subarray(start).some((x) => x !== 1)) {
      throw new Error(
        `rollout: prompt ${b} is not left-padded (its mask must be 0s then 1s up to the end)`,
      );
    }
    return p.inputIds.subarray(b * P + start, b * P + P);
  });
}

/**
 * Every sample of every prompt as one engine request; the results laid out as `generate`'s:
 * [B * n, R] rows b * n + j, pad and mask 0 after the last token (the EOS included), log-probs 0
 * there.
 */
async function engineRollout(
  model: CausalLM,
  c: {
    tokenizer: Tokenizer;
    eosTokenIds: number[];
    options: RolloutForOptions;
    pool: EnginePool;
    prompts: RolloutPrompts;
    o: RolloutOptions;
  },
): Promise<RolloutOutput> {
  const { prompts, o } = c;
  const rows = promptRows(prompts);
  const n = o.n, R = o.responseLength;
  const longest = Math.max(...rows.map((r) => r.length)) + R;
  // The batch is awaited whole, so no request waits on a read: fewer, larger ones.
  const engine = new Engine(model, {
    ...engineOptions(c, o, { sequences: prompts.batch * n, longest }),
    stepsInFlight: ENGINE_BATCH_STEPS_IN_FLIGHT,
  });
  let results;
  try {
    results = await submitPrompts(engine, rows, {
      n,
      maxTokens: R,
      seed: o.seed,
      returnLogProbs: o.returnLogProbs,
      onResult: o.onProgress,
    });
  } finally {
    await engine.close();
  }
  return responseRows(results.flat(), {
    responseLength: R,
    padTokenId: c.tokenizer.padTokenId,
    logProbs: o.returnLogProbs ?? false,
  });
}
