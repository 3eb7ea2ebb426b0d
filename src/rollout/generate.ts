/**
 * Batched generation with a KV cache: one prefill of the B prompts whose keys and values fill the
 * cache rows of their n samples (a prompt is computed once, not n times), then decode steps for
 * all B * n sequences together, each step's token sampled on the GPU. Steps are recorded back to back
 * with no readback; every `checkEvery` steps one small read of the finished flags stops early
 * once every sequence has emitted EOS (the steps recorded while it comes back keep the GPU busy),
 * and the responses are read once at the end.
 */
import { gpu } from "../gpu/mod.ts";
import type { CausalLM, KvDtype } from "../nn/mod.ts";
import { positionIdsFromMask } from "../nn/mod.ts";
import { embedding, scope, Tensor } from "../tensor/mod.ts";
import { SampleBuffers, type SamplerConfig, sampleStep } from "./sampler.ts";

export interface GenerateOptions {
  /** Left-padded prompts [B, P]. */
  inputIds: Int32Array;
  /** [B, P] 1 = token, 0 = padding. */
  attentionMask: Int32Array;
  batch: number;
  promptLength: number;
  /** Samples per prompt (rows b * n .. b * n + n - 1 share prompt b). Default 1. */
  n?: number;
  responseLength: number;
  /** Default 1; 0 decodes greedily (argmax) as vLLM does, with untempered log-probs. */
  temperature?: number;
  /** 0 or less = off. */
  topK?: number;
  /** 1 = off. */
  topP?: number;
  /** false = greedy. Default true. */
  doSample?: boolean;
  eosTokenIds: number[];
  padTokenId: number;
  seed?: number;
  returnLogProbs?: boolean;
  /** Steps between checks of the finished flags (one small readback each). Default 16. */
  checkEvery?: number;
  /** Submit every decode step as soon as it is recorded (default true). */
  submitEachStep?: boolean;
  /** Prefill each prompt once for its n samples (default true); false prefills all B * n rows. */
  sharedPrefill?: boolean;
  /**
   * Element type of the KV cache (default f32): f16 halves its memory and the bytes each decode
   * step reads, on any adapter, at the cost of rounding keys and values to halves.
   */
  kvDtype?: KvDtype;
  /** Hears the decode steps done so far (of responseLength) at each check of the flags. */
  onProgress?: (done: number, total: number) => void;
}

export interface GenerateResult {
  /** [B * n, R] sampled tokens, pad after EOS. */
  responses: Int32Array;
  /** [B * n, R] 1 up to and including EOS, 0 after. */
  responseMask: Int32Array;
  /**
   * [B * n, R] log_softmax(logits / temperature) of each sampled token (0 where masked); at
   * temperature 0 (greedy) log_softmax(logits), the untempered distribution.
   */
  logProbs?: Float32Array;
  /** [B * n, P] the prompts repeated n times. */
  promptIds: Int32Array;
  /** [B * n, P] */
  attentionMask: Int32Array;
  /** [B * n, P] the prompt positions used (cumsum(mask) - 1, clipped at 0). */
  positionIds: Int32Array;
  /** Sampling steps run: R, or fewer when every sequence had finished at a check. */
  steps: number;
}

function repeatRows(a: Int32Array, rows: number, width: number, n: number): Int32Array {
  const out = new Int32Array(rows * n * width);
  for (let b = 0; b < rows; b++) {
    for (let j = 0; j < n; j++) {
      out.set(a.subarray(b * width, (b + 1) * width), (b * n + j) * width);
    }
  }
  return out;
}

function validate(o: GenerateOptions, vocab: number): void {
  const { batch: B, promptLength: P } = o;
  const fail = (why: string): never => {
    throw new Error(`generate: ${why}`);
  };
  if (!(B > 0 && P > 0 && Number.isInteger(B) && Number.isInteger(P))) {
    fail(`batch ${B} and promptLength ${P} must be positive integers`);
  }
  if (o.inputIds.length !== B * P || o.attentionMask.length !== B * P) {
    fail(
      `inputIds (${o.inputIds.length}) and attentionMask (${o.attentionMask.length}) must hold ` +
        `[${B}, ${P}] = ${B * P} values`,
    );
  }
  if (!(o.responseLength > 0 && Number.isInteger(o.responseLength))) {
    fail(`responseLength ${o.responseLength} must be a positive integer`);
  }
  for (let i = 0; i < o.inputIds.length; i++) {
    if (o.inputIds[i] < 0 || o.inputIds[i] >= vocab) {
      fail(
        `token id ${o.inputIds[i]} at [${Math.floor(i / P)}, ${i % P}] is outside [0, ${vocab})`,
      );
    }
  }
  for (let b = 0; b < B; b++) {
    if (o.attentionMask[b * P + P - 1] !== 1) {
      fail(`prompt ${b} does not end in a real token: prompts must be left-padded`);
    }
  }
}

/** Generates `n` responses per prompt; see the module doc for the schedule. */
export async function generate(model: CausalLM, options: GenerateOptions): Promise<GenerateResult> {
  validate(options, model.config.vocabSize);
  const n = options.n ?? 1;
  const { batch, promptLength: P, responseLength: R } = options;
  const N = batch * n;
  const cfg: SamplerConfig = {
    temperature: options.temperature ?? 1,
    topK: options.topK ?? 0,
    topP: options.topP ?? 1,
    doSample: options.doSample ?? true,
    seed: options.seed ?? 0,
    eosTokenIds: options.eosTokenIds,
    padTokenId: options.padTokenId,
  };
  const checkEvery = Math.max(1, options.checkEvery ?? 16);
  const promptIds = repeatRows(options.inputIds, batch, P, n);
  const mask = repeatRows(options.attentionMask, batch, P, n);
  const positionIds = positionIdsFromMask(mask, N, P);
  const lastPositions = Int32Array.from({ length: N }, (_, r) => positionIds[r * P + P - 1]);
  const cache = model.createCache(N, P + R, mask, { dtype: options.kvDtype });
  const bufs = SampleBuffers.create(N, R, lastPositions, options.padTokenId);
  try {
    scope(() => {
      const shared = (options.sharedPrefill ?? true) && n > 1;
      const rows = shared ? batch : N;
      const ids = shared ? options.inputIds : promptIds;
      const rowMask = shared ? options.attentionMask : mask;
      const logits = model.prefill(cache, Tensor.from(ids, [rows, P], "i32"), {
        positionIds: Tensor.from(positionIdsFromMask(rowMask, rows, P), [rows, P], "i32"),
        attentionMask: Tensor.from(rowMask, [rows, P], "i32"),
      }); // [rows, V]
      // each sample row r draws its first token from its prompt's logits, row floor(r / n)
      const sampleOf = Int32Array.from({ length: N }, (_, r) => Math.floor(r / n));
      sampleStep(
        shared ? embedding(Tensor.from(sampleOf, [N], "i32"), logits) : logits,
        bufs,
        0,
        cfg,
      );
    });
    let steps = 1;
    const decode = (): boolean => {
      if (steps >= R) return false;
      const step = steps;
      scope(() =>
        sampleStep(model.decodeStep(cache, bufs.nextIds, bufs.positions), bufs, step, cfg)
      );
      // Submitting each step lets the GPU run it while the next one is being recorded.
      if (options.submitEachStep ?? true) gpu().flush();
      steps++;
      return true;
    };
    while (steps < R) {
      if (steps % checkEvery === 0) options.onProgress?.(steps, R);
      if (steps % checkEvery === 0 && cfg.eosTokenIds.length > 0) {
        // Up to checkEvery - 1 more steps run while the flags come back (the next check stays
        // at the next multiple); once all have finished they only add padding.
        let extra = 0;
        const [fin] = await gpu().readWhile(
          [{ buffer: bufs.finished.buffer, size: 4 * N }],
          () => extra++ < checkEvery - 1 && decode(),
        );
        if (new Uint32Array(fin).every((f) => f !== 0)) break;
      }
      decode();
    }
    const wanted = [bufs.responses, bufs.responseMask];
    if (options.returnLogProbs) wanted.push(bufs.logProbs);
    const data = await gpu().read(wanted.map((t) => ({ buffer: t.buffer, size: t.byteSize })));
    const result: GenerateResult = {
      responses: new Int32Array(data[0]),
      responseMask: new Int32Array(data[1]),
      promptIds,
      attentionMask: mask,
      positionIds,
      steps,
    };
    if (options.returnLogProbs) result.logProbs = new Float32Array(data[2]);
    return result;
  } finally {
    cache.dispose();
    bufs.dispose();
  }
}
