/**
 * The LM head fused with log-prob / entropy / Σπ² (shaders/lm_head_logprob.wgsl): from final
 * hidden states and the head matrix straight to per-token statistics, one vocabulary chunk at a
 * time, so the [N, V] logits never exist (a 151,936-token vocabulary fits any adapter). The
 * backward (lm_head_backward.ts) recomputes each chunk's logits (or takes the forward's, within
 * `keepBytes`, whose chunks then run in groups: lm_head_chunks.ts) and accumulates d hidden and
 * d weight chunk by chunk.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { isGradEnabled, record, registerOp } from "../autograd.ts";
import { fmtShape, sameShape, Tensor } from "../tensor.ts";
import { toF16 } from "./elementwise_kernel.ts";
import { grid1d, rowDefines } from "./grid.ts";
import { chunkedBackward } from "./lm_head_backward.ts";
import {
  chunkAt,
  chunkGroups,
  chunkGroupSize,
  logitsGemm,
  MAX_CHUNK_GROUP,
  sliceRows,
} from "./lm_head_chunks.ts";
import { gemm } from "./matmul_kernel.ts";
import { stackedRow } from "./logprob.ts";

const WG = 256; // finalize and backward: one row / one logit per invocation
/** Bytes one chunk's [N, cols] logits may take unless the caller says otherwise. */
export const LM_HEAD_CHUNK_BYTES = 64 * 2 ** 20;
const COL_ALIGN = 64; // chunk widths are a multiple of it (tile-friendly, 4-byte copies in f16)

registerOp(
  "lm_head_logprob",
  "hidden [..., C] f32, head W [V, C] (f32, or f16 without gradient), targets i32 [N] -> " +
    "stacked [K, N] (log softmax(h W^T / T) at the target, then entropy, then Σπ² as asked), " +
    "over vocabulary chunks; backward recomputes each chunk's logits (or keeps them within a " +
    "budget) -> d hidden, d W",
);

export interface LmHeadLogprobOptions {
  /** Logits are divided by it first (the rollout temperature). [1] */
  temperature?: number;
  /** Also the entropy of softmax(logits / temperature). [false] */
  withEntropy?: boolean;
  /** Also Σ_v π_v² (no gradient flows through it). [false] */
  withSumPiSquared?: boolean;
  /** Bytes of one chunk's logits; capped by maxStorageBufferBindingSize. [LM_HEAD_CHUNK_BYTES] */
  chunkBytes?: number;
  /**
   * Under the tape, the forward keeps every chunk's logits for the backward when together they
   * take at most this many bytes (N x V x 4): the backward then skips one LM-head product per
   * chunk, for that much memory held from the forward to the backward. [0: recompute]
   */
  keepBytes?: number;
  /**
   * Chunks per batched product when the logits are kept (at most MAX_CHUNK_GROUP); default: the
   * count whose backward products best fill the GPU's waves (1 where its size is unknown).
   */
  chunkGroup?: number;
  /**
   * Mixed precision: an f16 copy of `weight` to multiply with, as `linear`'s `half`: the logits
   * come from f16 hidden and weight with f32 accumulation, the backward casts each chunk's logit
   * gradient to f16, and d weight (f32) goes to `weight`.
   */
  half?: Tensor | null;
}

/** Each output takes the shape of `targets`. */
export interface LmHeadLogprobResult {
  /** log p(target); 0 where the target is -100, NaN for any other out-of-range target */
  logProbs: Tensor;
  entropy: Tensor | null;
  sumPiSquared: Tensor | null;
}

/**
 * Vocabulary columns per chunk for `rows` hidden states of width `hidden`: the [rows, cols]
 * logits and the [cols, hidden] weight slice each fit the budget and the binding limit.
 */
export function lmHeadChunkColumns(
  o: { rows: number; hidden: number; vocab: number; chunkBytes?: number },
): number {
  const max = gpu().limits.maxStorageBufferBindingSize;
  const budget = Math.min(max, o.chunkBytes ?? LM_HEAD_CHUNK_BYTES);
  const fit = Math.floor(budget / (4 * Math.max(o.rows, o.hidden, 1)));
  if (fit >= o.vocab) return o.vocab;
  const cols = Math.floor(fit / COL_ALIGN) * COL_ALIGN;
  if (cols < COL_ALIGN) {
    throw new Error(
      `lmHeadLogprob: ${o.rows} rows x hidden ${o.hidden} leave less than ${COL_ALIGN} ` +
        `vocabulary columns per chunk within ${budget} bytes; use fewer rows per micro-batch`,
    );
  }
  return cols;
}

function check(hidden: Tensor, weight: Tensor, targets: Tensor, temperature: number): void {
  const desc = `hidden ${fmtShape(hidden.shape)} ${hidden.dtype}, weight ` +
    `${fmtShape(weight.shape)} ${weight.dtype}, targets ${
      fmtShape(targets.shape)
    } ${targets.dtype}`;
  const bad = (why: string) => new Error(`lmHeadLogprob: ${why}, got ${desc}`);
  if (hidden.dtype !== "f32" || targets.dtype !== "i32") {
    throw bad("expected f32 hidden, i32 targets");
  }
  if (weight.rank !== 2 || weight.shape[0] === 0) throw bad("weight must be [V, C] with V > 0");
  if (weight.dtype !== "f32" && weight.dtype !== "f16") throw bad("weight must be f32 or f16");
  if (weight.dtype === "f16" && weight.requiresGrad) throw bad("an f16 weight takes no gradient");
  if (hidden.shape.at(-1) !== weight.shape[1]) throw bad("hidden must end in C");
  if (targets.size * weight.shape[1] !== hidden.size) throw bad("need one target per hidden row");
  if (!(temperature > 0) || !Number.isFinite(temperature)) {
    throw new Error(`lmHeadLogprob: temperature must be finite and > 0, got ${temperature}`);
  }
}

/**
 * Log-probs of `targets` under softmax(hidden @ weight^T / temperature), and optionally the
 * entropy and Σπ², computed over vocabulary chunks. The log-prob and entropy are rows of one
 * recorded node, so `backward([logProbs, entropy], [gLp, gEnt])` runs one chunked backward.
 * Tied embeddings pass the embedding table as `weight`: both uses' gradients add up.
 */
export function lmHeadLogprob(
  hidden: Tensor,
  weight: Tensor,
  targets: Tensor,
  options: LmHeadLogprobOptions = {},
): LmHeadLogprobResult {
  const temperature = options.temperature ?? 1;
  const withEntropy = options.withEntropy ?? false;
  const withSpp = options.withSumPiSquared ?? false;
  check(hidden, weight, targets, temperature);
  const half = options.half ?? null;
  if (half && (half.dtype !== "f16" || !sameShape(half.shape, weight.shape))) {
    throw new Error(
      `lmHeadLogprob: half must be the f16 copy of weight ${fmtShape(weight.shape)}, got ` +
        `${fmtShape(half.shape)} ${half.dtype}`,
    );
  }
  // Under mixed precision the products read the f16 copies; the tape still holds the masters.
  const h = half ? toF16(hidden) : hidden;
  const wt = half ?? weight;
  const [V, C] = weight.shape, N = targets.size;
  const cols = lmHeadChunkColumns({ rows: N, hidden: C, vocab: V, chunkBytes: options.chunkBytes });
  const K = 1 + (withEntropy ? 1 : 0) + (withSpp ? 1 : 0);
  const defines = { WITH_ENTROPY: withEntropy, WITH_SPP: withSpp };
  const params = (v0: number, w: number, first: boolean) =>
    packParams([N, w, v0, V, { f32: temperature }, first ? 1 : 0, 0, 0]);
  // One chunk (a small vocabulary): the weight itself. Its logits are kept for the backward, and
  // so are several chunks' within `keepBytes`, one [count, N, w] tensor per group of chunks.
  const single = cols >= V;
  const taped = isGradEnabled() && (hidden.requiresGrad || weight.requiresGrad);
  const keepAll = taped && (single || N * V * 4 <= (options.keepBytes ?? 0));
  const group = keepAll && !single ? chunkGroupOf(options.chunkGroup, N, C, cols) : 1;
  const groups = chunkGroups(V, cols, group);
  const out = Tensor.empty(K === 1 ? targets.shape : [K, N], "f32", "lm_head_logprob");
  const saved = Tensor.empty([2, N], "f32", "lm_head_logprob.saved"); // lse, entropy
  let kept: Tensor[] | null = null;
  if (N > 0) {
    const state = Tensor.empty([5, N], "f32", "lm_head_logprob.state");
    const shared = keepAll ? null : Tensor.empty([N, cols], "f32", "lm_head_logprob.logits");
    const zs: Tensor[] = [];
    const slice = single ? wt : Tensor.empty([group * cols, C], wt.dtype, "lm_head_logprob.weight");
    for (const group of groups) {
      const { v0, w, count } = group;
      if (!single) sliceRows(wt, slice, v0, count * w);
      const z = shared ?? Tensor.empty([count, N, w], "f32", "lm_head_logprob.logits");
      if (!shared) zs.push(z);
      gemm(h, slice, z, logitsGemm(group, N, C));
      for (let i = 0; i < count; i++) {
        gpu().dispatch(
          {
            shader: "lm_head_logprob",
            entry: "chunk_forward",
            defines: { ...defines, ...rowDefines(w) },
          },
          {
            params: params(v0 + i * w, w, v0 + i * w === 0),
            buffers: [chunkAt(z, i, N, w), targets.buffer, state.buffer],
            workgroups: grid1d(N, 1),
          },
        );
      }
    }
    gpu().dispatch({ shader: "lm_head_logprob", entry: "finalize", defines: { ...defines, WG } }, {
      params: params(0, 0, false),
      buffers: [state.buffer, targets.buffer, out.buffer, saved.buffer],
      workgroups: grid1d(N, WG),
    });
    // the queue runs these dispatches before any reuse of the buffers
    state.dispose();
    if (!single) slice.dispose();
    shared?.dispose();
    if (keepAll) kept = zs;
  }
  record("lm_head_logprob", [hidden, weight], out, (g) => {
    const dh = hidden.requiresGrad ? Tensor.empty(hidden.shape, "f32", "lm_head.dhidden") : null;
    const dw = weight.requiresGrad ? Tensor.empty(weight.shape, "f32", "lm_head.dweight") : null;
    if (N > 0) {
      chunkedBackward({
        hidden: h,
        weight: wt,
        targets,
        g,
        saved,
        dh,
        dw,
        groups,
        cols,
        withEntropy,
        params,
        logits: kept,
      });
    }
    kept = null;
    saved.dispose();
    if (h !== hidden) h.dispose();
    return [dh, dw];
  });
  if (!out.node) {
    saved.dispose();
    kept?.forEach((z) => z.dispose());
    if (h !== hidden) h.dispose();
  }
  if (K === 1) return { logProbs: out, entropy: null, sumPiSquared: null };
  const spp = withSpp ? plainRow(out, K - 1, targets.shape) : null;
  return {
    logProbs: stackedRow(out, 0, targets.shape),
    entropy: withEntropy ? stackedRow(out, 1, targets.shape) : null,
    sumPiSquared: spp,
  };
}

/** Row r of a [K, N] tensor, copied, off the tape (Σπ² is a statistic, not a loss term). */
function plainRow(stacked: Tensor, r: number, shape: readonly number[]): Tensor {
  const N = stacked.shape[1];
  const o = Tensor.empty(shape, "f32", "sum_pi_squared");
  gpu().copy(stacked.buffer, r * N * 4, o.buffer, 0, N * 4);
  return o;
}

/** The group size asked for, checked, or the one that fills the GPU's waves best. */
function chunkGroupOf(asked: number | undefined, rows: number, hidden: number, cols: number) {
  if (asked === undefined) return chunkGroupSize(rows, hidden, cols);
  if (!Number.isInteger(asked) || asked < 1 || asked > MAX_CHUNK_GROUP) {
    throw new Error(`lmHeadLogprob: chunkGroup must be 1 to ${MAX_CHUNK_GROUP}, got ${asked}`);
  }
  return asked;
}
