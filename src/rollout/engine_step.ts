/**
 * One step of the engine on the GPU: prefill of the shared prompts created this step and of the
 * sequences admitted without one (together, into a contiguous cache whose rows are copied into
 * their blocks, after the blocks a row holds from the prefix cache: engine_prefill.ts; a sequence
 * admitted with a shared prompt copies its partly filled last block and the prompt's logits
 * instead, engine_prefix.ts), one decode step of the running
 * sequences over the paged cache, one sampling pass over all their logits with each row's own
 * (request seed, token index), and a copy of the sampled tokens and their log-probs into the
 * engine's readback ring, read once for several steps (a read's latency in Deno is about a
 * decode step's GPU time, and it waits for the queue to empty). A decoding row's input token is
 * the one its sequence sampled in the previous step: copied on the GPU from that step's outputs
 * when the host has not read it yet (several steps may be in flight).
 */
import { gpu } from "../gpu/mod.ts";
import type { CausalLM, KvDtype, PagedKvCache, PagedSequence } from "../nn/mod.ts";
import { scope, Tensor } from "../tensor/mod.ts";
import type { PrefixEntry } from "./engine_prefix.ts";
import type { PrefixProbe } from "./engine_prefix_probe.ts";
import { prefill } from "./engine_prefill.ts";
import { SampleBuffers, type SamplerConfig, sampleStep } from "./sampler.ts";

/** A sequence as the step sees it: its context so far and its place in the cache. */
export interface StepSequence {
  prompt: Int32Array;
  /** Tokens read back so far. */
  tokens: number[];
  /** Tokens sampled so far, those still being read back included. */
  sampled: number;
  seed: number;
  cache: PagedSequence;
  /** Its row in the last step that sampled for it. */
  row: number;
  /** The shared prompt it holds (admitted with it: nothing to prefill). */
  prefix: PrefixEntry | null;
  /** Positions of its context its blocks held from the prefix cache when admitted. */
  cached: number;
  /** What it found in the prefix cache while it waits for blocks (engine_prefix_probe.ts). */
  probe: PrefixProbe | null;
}

export interface StepInput {
  model: CausalLM;
  cache: PagedKvCache;
  kvDtype: KvDtype;
  sampler: SamplerConfig;
  /** Shared prompts to prefill (blocks reserved) before the admitted copy them. */
  prefixes: PrefixEntry[];
  /**
   * Sequences to prefill (prompt + tokens, all read; blocks reserved), or to start from their
   * shared prompt, and draw a token for.
   */
  admitted: StepSequence[];
  /** Running sequences whose last sampled token is appended (blocks reserved for it). */
  decoding: StepSequence[];
  /** The step before, whose outputs hold the tokens not read yet. */
  previous: InFlightStep | null;
  readback: StepReadback;
}

/**
 * A recorded step: its rows (admitted, then decoding) and its sampling buffers, held only until
 * the next step is recorded (`releaseSamples`): its tokens reach the host through the readback
 * ring, and only the newest step's feed the next one.
 */
export interface InFlightStep {
  rows: StepSequence[];
  bufs: SampleBuffers | null;
}

/**
 * Frees `step`'s sampling buffers. Steps recorded later are ordered after it on the GPU, so the
 * pool may hand the buffers out again at once; freeing each step's as the next is recorded keeps
 * the pool's pattern the same from step to step (the decoder then finds its bind groups again).
 */
export function releaseSamples(step: InFlightStep): void {
  step.bufs?.dispose();
  step.bufs = null;
}

/**
 * Where a step leaves its tokens and log-probs for the host: slot `slot` of an i32 ring of
 * [slots, 2, stride] words (tokens, then the log-probs' f32 bits), read once for several steps.
 */
export interface StepReadback {
  ring: Tensor;
  slot: number;
  stride: number;
}

export function context(s: StepSequence): Int32Array {
  const out = new Int32Array(s.prompt.length + s.tokens.length);
  out.set(s.prompt);
  out.set(s.tokens, s.prompt.length);
  return out;
}

/**
 * Starts the admitted that hold a shared prompt from it: each gets its own copy of the prompt's
 * partly filled block (staged once per prompt for all of them).
 */
function startShared(input: StepInput): void {
  const holders = new Map<PrefixEntry, StepSequence[]>();
  for (const s of input.admitted) {
    if (s.prefix) holders.set(s.prefix, [...holders.get(s.prefix) ?? [], s]);
  }
  for (const [e, seqs] of holders) {
    const P = e.ids.length, bs = input.cache.blockSize;
    if (!e.logits) throw new Error("engine: a shared prompt is used before its prefill");
    if (e.cache.blocks.length > e.full) {
      const own = seqs.map((s) => s.cache.blocks[e.full]);
      input.cache.copyBlock(e.cache.blocks[e.full], own, P - e.full * bs);
    }
    for (const s of seqs) s.cache.length = P;
  }
}

/** Logits [n, V] of one decode step of `rows` over the paged cache. */
function decode(input: StepInput, rows: StepSequence[]): Tensor {
  const n = rows.length;
  const ids = Tensor.from(
    Int32Array.from(rows, (s) => (s.tokens.length === s.sampled ? s.tokens[s.sampled - 1] : 0)),
    [n, 1],
    "i32",
  );
  // Tokens not read yet come from the last step's outputs: one copy per run of rows that keep
  // their order (usually all of them: finished rows only leave gaps).
  let run: { from: number; to: number; count: number } | null = null;
  const flush = () => {
    if (run) {
      const from = input.previous?.bufs;
      if (!from) throw new Error("engine: the last step's sampled tokens were freed too soon");
      gpu().copy(
        from.responses.buffer,
        4 * run.from,
        ids.buffer,
        4 * run.to,
        4 * run.count,
      );
    }
    run = null;
  };
  rows.forEach((s, i) => {
    if (s.tokens.length === s.sampled) return flush();
    if (!input.previous || input.previous.rows[s.row] !== s) {
      throw new Error(
        "engine: a running sequence's last token is neither read nor in the last step",
      );
    }
    if (run && run.from + run.count === s.row && run.to + run.count === i) run.count++;
    else {
      flush();
      run = { from: s.row, to: i, count: 1 };
    }
  });
  flush();
  // No padding: a token's position is its index in the sequence, the cache length before it.
  const positions = Int32Array.from(rows, (s) => s.cache.length);
  const { table, maxLength } = input.cache.table(rows.map((s) => s.cache));
  return input.model.decodeWith(
    ids,
    Tensor.from(positions, [n, 1], "i32"),
    input.cache.layerAttention(table, maxLength),
    maxLength,
  );
}

/**
 * Records one step (see the module doc) and starts reading its tokens back; the sequences'
 * cache lengths, sampled counts and rows are updated as recorded.
 */
export function recordStep(input: StepInput): InFlightStep {
  const rows = [...input.admitted, ...input.decoding];
  const n = rows.length;
  const V = input.model.config.vocabSize;
  const bufs = scope(() => {
    const logits = Tensor.empty([n, V], "f32", "engine.logits");
    const g = gpu();
    // The new shared prompts and the admitted without one, prefilled together.
    const plain = input.admitted.filter((s) => !s.prefix);
    const targets = [
      ...input.prefixes.map((e) => ({ ids: e.ids, cache: e.cache, cached: e.cached })),
      ...plain.map((s) => ({ ids: context(s), cache: s.cache, cached: s.cached })),
    ];
    scope(() => {
      const pre = targets.length > 0 ? prefill(input, targets) : [];
      input.prefixes.forEach((e, k) => {
        e.logits = Tensor.empty([1, V], "f32", "engine.prefix_logits").keep();
        g.copy(pre[k].logits.buffer, pre[k].row * V * 4, e.logits.buffer, 0, V * 4);
      });
      startShared(input);
      let k = input.prefixes.length;
      input.admitted.forEach((s, i) => {
        const from = s.prefix ? { logits: s.prefix.logits!, row: 0 } : pre[k++];
        g.copy(from.logits.buffer, from.row * V * 4, logits.buffer, i * V * 4, V * 4);
      });
    });
    // The prefill's temporaries are back in the pool and its uniforms submitted: the decode
    // below then takes the same buffers and uniform slots as in a step without admissions, so
    // it finds its bind groups again.
    if (input.admitted.length > 0) g.flush();
    if (input.decoding.length > 0) {
      const l = decode(input, input.decoding);
      const at = input.admitted.length * V * 4;
      g.copy(l.buffer, 0, logits.buffer, at, input.decoding.length * V * 4);
    }
    const rng = new Uint32Array(2 * n);
    rows.forEach((s, i) => {
      rng[2 * i] = s.seed >>> 0;
      rng[2 * i + 1] = s.sampled;
    });
    const b = SampleBuffers.create(n, 1, new Int32Array(n), input.sampler.padTokenId);
    sampleStep(logits, b, 0, input.sampler, { rowRng: Tensor.from(rng, [n, 2], "u32") });
    return b;
  });
  for (const s of input.decoding) s.cache.length++;
  rows.forEach((s, i) => {
    s.sampled++;
    s.row = i;
  });
  const { ring, slot, stride } = input.readback;
  const at = 8 * slot * stride;
  gpu().copy(bufs.responses.buffer, 0, ring.buffer, at, 4 * n);
  gpu().copy(bufs.logProbs.buffer, 0, ring.buffer, at + 4 * stride, 4 * n);
  gpu().flush(); // the GPU runs this step while the host records the next
  return { rows, bufs };
}
