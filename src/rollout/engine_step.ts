/**
 * One step of the engine on the GPU: prefill of the sequences admitted this step (each into a
 * batch-1 contiguous cache whose rows are copied into its blocks), one decode step of the running
 * sequences over the paged cache, one sampling pass over all their logits with each row's own
 * (request seed, token index), and one readback of the sampled tokens and their log-probs.
 */
import { gpu } from "../gpu/mod.ts";
import type { CausalLM, KvDtype, PagedKvCache, PagedSequence } from "../nn/mod.ts";
import { scope, Tensor } from "../tensor/mod.ts";
import { SampleBuffers, type SamplerConfig, sampleStep } from "./sampler.ts";

/** A sequence as the step sees it: its context so far and its place in the cache. */
export interface StepSequence {
  prompt: Int32Array;
  /** Tokens sampled so far (the last one not yet in the cache while it runs). */
  tokens: number[];
  seed: number;
  cache: PagedSequence;
}

export interface StepInput {
  model: CausalLM;
  cache: PagedKvCache;
  kvDtype: KvDtype;
  sampler: SamplerConfig;
  /** Sequences to prefill (prompt + tokens so far, blocks reserved) and draw a first token for. */
  admitted: StepSequence[];
  /** Running sequences whose last token is appended (blocks reserved for it). */
  decoding: StepSequence[];
}

/** The sampled tokens and their log-probs, admitted rows first, then decoding ones. */
export interface StepOutput {
  tokens: Int32Array;
  logProbs: Float32Array;
}

function context(s: StepSequence): Int32Array {
  const out = new Int32Array(s.prompt.length + s.tokens.length);
  out.set(s.prompt);
  out.set(s.tokens, s.prompt.length);
  return out;
}

/** Prefills `s` into its blocks; logits [1, V] of its last position. */
function prefillOne(input: StepInput, s: StepSequence): Tensor {
  const ids = context(s);
  const C = ids.length;
  const ones = new Int32Array(C).fill(1);
  const kv = input.model.createCache(1, C, ones, { dtype: input.kvDtype });
  try {
    const logits = input.model.prefill(kv, Tensor.from(ids, [1, C], "i32"), {
      positionIds: Tensor.from(Int32Array.from({ length: C }, (_, i) => i), [1, C], "i32"),
      attentionMask: Tensor.from(ones, [1, C], "i32"),
    });
    input.cache.writePrefill(s.cache, kv, C);
    return logits;
  } finally {
    kv.dispose();
  }
}

/** Logits [n, V] of one decode step of `rows` over the paged cache. */
function decode(input: StepInput, rows: StepSequence[]): Tensor {
  const n = rows.length;
  const ids = Int32Array.from(rows, (s) => s.tokens[s.tokens.length - 1]);
  // No padding: a token's position is its index in the sequence, the cache length before it.
  const positions = Int32Array.from(rows, (s) => s.cache.length);
  const { table, maxLength } = input.cache.table(rows.map((s) => s.cache));
  return input.model.decodeWith(
    Tensor.from(ids, [n, 1], "i32"),
    Tensor.from(positions, [n, 1], "i32"),
    input.cache.layerAttention(table, maxLength),
    maxLength,
  );
}

/** Runs one step (see the module doc); one readback. */
export async function runStep(input: StepInput): Promise<StepOutput> {
  const rows = [...input.admitted, ...input.decoding];
  const n = rows.length;
  const V = input.model.config.vocabSize;
  const bufs = scope(() => {
    const logits = Tensor.empty([n, V], "f32", "engine.logits");
    const g = gpu();
    input.admitted.forEach((s, i) => {
      const l = prefillOne(input, s);
      g.copy(l.buffer, 0, logits.buffer, i * V * 4, V * 4);
    });
    if (input.decoding.length > 0) {
      const l = decode(input, input.decoding);
      g.copy(
        l.buffer,
        0,
        logits.buffer,
        input.admitted.length * V * 4,
        input.decoding.length * V * 4,
      );
    }
    const rng = new Uint32Array(2 * n);
    rows.forEach((s, i) => {
      rng[2 * i] = s.seed >>> 0;
      rng[2 * i + 1] = s.tokens.length;
    });
    const b = SampleBuffers.create(n, 1, new Int32Array(n), input.sampler.padTokenId);
    sampleStep(logits, b, 0, input.sampler, { rowRng: Tensor.from(rng, [n, 2], "u32") });
    return b;
  });
  try {
    const [tokens, logProbs] = await gpu().read([
      { buffer: bufs.responses.buffer, size: 4 * n },
      { buffer: bufs.logProbs.buffer, size: 4 * n },
    ]);
    return { tokens: new Int32Array(tokens), logProbs: new Float32Array(logProbs) };
  } finally {
    bufs.dispose();
  }
}
