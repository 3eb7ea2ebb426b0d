/**
 * The q, k and v projections of attention in one dispatch for few rows without autograd
 * (decoding): [x Wq^T + bq, x Wk^T + bk, x Wv^T + bv], shaders/matmul_skinny_qkv.wgsl. The three
 * weights may have different row counts (grouped-query attention). Training keeps three
 * `linear`s, whose backward exists; this op refuses inputs whose gradient is being recorded.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { shapeSize, Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";
import {
  checkFusedConfig,
  checkFusedOperands,
  fusedOperandsFit,
  type FusedSkinnyConfig,
  fusedSkinnyConfig,
  fusedSkinnySpec,
  fusedSplitK,
} from "./skinny_fused.ts";

/** Threads along N (wgX, 4 weight rows each) and M (wgY, tm rows of x each), K per stage. */
export type QkvLinearConfig = FusedSkinnyConfig;

/**
 * Whether `decoderLayer` fuses the q, k and v projections, whether a fused product of few
 * blocks splits K, and whether a cached rotation takes its split partials (`rope`: bias, RoPE
 * and the cache write in the split sum's pass). Mutable for benchmarks (before/after).
 */
export const qkvLinearPolicy = {
  enabled: true,
  splitK: true,
  rope: true,
  /** K splits forced on every fused product (tests: a CPU adapter's products do not split). */
  splits: null as number | null,
  /**
   * Threads along N of the tile from `wideFrom` rows (the skinny kernels' tile has 8: 32 weight
   * rows a block). One H100 (2026-11-28, 0.5B q/k/v with biases, f16): the product alone
   * (`skinny_sweep.ts --shapes qkv_fused`, split sum included) took 36.1-40.1 us at 256 rows with
   * 16 against 54.2, 14.6 at 64 against 20.3, the same at 128. Whole decode steps
   * (`generate_device.ts --qkv-wg-x 8|16`, twice each): B 256 13.02 / 13.04 -> 12.71 / 12.74 ms,
   * B 128 8.07 / 8.06 -> 8.19 / 8.20 (its splits, and so the rotation's sum, grow), B 64 5.12 /
   * 5.11 -> 5.08 / 5.09 (within noise): wide past 128 rows only.
   */
  wideX: 16,
  wideFrom: 129,
};

/** The three weights [N*, K] (f32 or f16, one dtype), in the order q, k, v. */
export type QkvWeights = readonly [Tensor, Tensor, Tensor];
/** The three biases [N*] (one dtype), or none. */
export type QkvBiases = readonly [Tensor | null, Tensor | null, Tensor | null];

export interface QkvLinearOptions {
  config?: QkvLinearConfig;
  /** K splits (tests force them); default: enough blocks to fill the GPU (`fusedSplitK`). */
  splits?: number;
  /**
   * When K is split, the pass that makes q, k and v from the partials (part [splits, M,
   * Nq + Nk + Nv], into the outputs given) in place of qkv_split_sum.wgsl: the cached decoding
   * path rotates them and writes the cache in that pass (rope_cache.ts, `QkvSplits`).
   */
  sum?: (part: Tensor, splits: number, outs: [Tensor, Tensor, Tensor]) => void;
}

/** Storage buffers the biased entry binds: x, three weights, three outputs, three biases. */
const BIAS_BINDINGS = 10;

/** The tile for M rows: skinny_fused.ts's, `qkvLinearPolicy.wideX` threads wide from `wideFrom`. */
export function qkvLinearConfig(m: number): QkvLinearConfig {
  const c = fusedSkinnyConfig(m);
  const p = qkvLinearPolicy;
  return m >= p.wideFrom && !gpu().isCpuAdapter ? { ...c, wgX: p.wideX } : c;
}

const biasCount = (b: QkvBiases) => b.filter((t) => t !== null).length;

/**
 * Whether `qkvLinear` takes these operands: few rows (`skinnyMaxM`), K % 4 == 0,
 * f32 or f16 operands, weights [N*, K] of one dtype, all three biases of one dtype or none (and
 * with biases, a device that binds ten storage buffers per stage), no gradient recorded, and not
 * a checkpointed segment's first forward (its recompute, under autograd, could not fuse).
 */
export function qkvLinearApplies(
  x: Tensor,
  w: QkvWeights,
  b: QkvBiases = [null, null, null],
): boolean {
  const k = x.shape[x.rank - 1];
  const nb = biasCount(b);
  return qkvLinearPolicy.enabled && fusedOperandsFit(x, w, b) &&
    w.every((t) => t.rank === 2 && t.shape[1] === k && t.dtype === w[0].dtype) &&
    (nb === 0 || (nb === 3 && b.every((t) => t?.dtype === b[0]?.dtype) &&
      gpu().limits.maxStorageBuffersPerShaderStage >= BIAS_BINDINGS));
}

/**
 * [q [..., Nq], k [..., Nk], v [..., Nv]] f32 = x W*^T + b*; x [..., K] (K % 4 == 0), W* [N*, K]
 * (f32 or f16), biases [N*] (all three or none). One dispatch; no gradient (throws if one would be
 * recorded).
 */
export function qkvLinear(
  x: Tensor,
  w: QkvWeights,
  b: QkvBiases = [null, null, null],
  options: QkvLinearOptions = {},
): [Tensor, Tensor, Tensor] {
  const names = ["w_q", "w_k", "w_v", "bias_q", "bias_k", "bias_v"];
  const bad = checkFusedOperands(
    [["x", x], ...[...w, ...b].map((t, i) => [names[i], t] as const)],
    { op: "qkv_linear", backward: "no backward; use three linear(x, w) under autograd" },
  );
  const k = x.shape[x.rank - 1];
  if (x.rank < 1) throw bad("x must have a last axis K");
  if (w.some((t) => t.rank !== 2 || t.shape[1] !== k)) throw bad(`weights must be 2-D [N, K=${k}]`);
  if (k % 4 !== 0) throw bad(`K must be a multiple of 4, got K=${k}`);
  if (w.some((t) => t.dtype !== w[0].dtype)) throw bad("the three weights must have one dtype");
  const nb = biasCount(b);
  if (nb !== 0 && nb !== 3) throw bad("give all three biases or none");
  b.forEach((t, i) => {
    if (t && (t.rank !== 1 || t.shape[0] !== w[i].shape[0])) {
      throw bad(`${names[i + 3]} must be [${w[i].shape[0]}]`);
    }
  });
  if (nb === 3 && b.some((t) => t?.dtype !== b[0]?.dtype)) throw bad("biases must have one dtype");
  const limit = gpu().limits.maxStorageBuffersPerShaderStage;
  if (nb === 3 && limit < BIAS_BINDINGS) {
    throw bad(`biases need ${BIAS_BINDINGS} storage buffers per stage; this device binds ${limit}`);
  }
  const lead = x.shape.slice(0, -1), m = shapeSize(lead);
  const [nq, nk, nv] = w.map((t) => t.shape[0]);
  const outs = w.map((t, i) =>
    Tensor.empty([...lead, t.shape[0]], "f32", "qkv_linear." + "qkv"[i])
  );
  const [q, kk, v] = outs;
  if (m === 0 || nq + nk + nv === 0) return [q, kk, v];
  const c = options.config ?? qkvLinearConfig(m);
  checkFusedConfig(c, { op: "qkv_linear", weightTiles: 1 });
  const bn = c.wgX * 4;
  const [gq, gk, gv] = [nq, nk, nv].map((n) => Math.ceil(n / bn));
  const spec = fusedSkinnySpec(c, {
    shader: "matmul_skinny_qkv",
    entry: nb ? "main_bias" : "main",
    x,
    w: w[0],
    bias: b[0],
  });
  const k4 = k / 4, rowBlocks = Math.ceil(m / (c.wgY * c.tm));
  const { splits, split4 } = fusedSplitK(k, c, {
    blocks: (gq + gk + gv) * rowBlocks,
    auto: qkvLinearPolicy.splitK,
    forced: options.splits ?? qkvLinearPolicy.splits ?? undefined,
  });
  const grid: [number, number, number] = [gq + gk + gv, rowBlocks, splits];
  const params = packParams([m, k4, nq, nk, nv, gq, gk, splits > 1 ? split4 : k4]);
  const weights = w.map((t) => t.buffer);
  if (splits === 1) {
    const buffers = [x.buffer, ...weights, ...outs.map((t) => t.buffer)];
    for (const t of b) if (t) buffers.push(t.buffer);
    gpu().dispatch(spec, { params, buffers, workgroups: grid });
    return [q, kk, v];
  }
  const part = Tensor.empty([splits, m, nq + nk + nv], "f32", "qkv_linear.partial");
  gpu().dispatch({ ...spec, entry: "main_split" }, {
    params,
    buffers: [x.buffer, ...weights, part.buffer],
    workgroups: grid,
  });
  if (options.sum) {
    options.sum(part, splits, [q, kk, v]);
    part.dispose();
    return [q, kk, v];
  }
  const buffers = [part.buffer, ...outs.map((t) => t.buffer)];
  for (const t of b) if (t) buffers.push(t.buffer);
  gpu().dispatch({
    shader: "qkv_split_sum",
    entry: nb ? "main_bias" : "main",
    f16: b[0]?.dtype === "f16",
    defines: { WG: SUM_WG, BIAS_T: b[0]?.dtype ?? "f32" },
  }, {
    params: packParams([m, nq, nk, nv, splits, 0, 0, 0]),
    buffers,
    workgroups: grid1d(m * (nq + nk + nv), SUM_WG),
  });
  part.dispose();
  return [q, kk, v];
}

const SUM_WG = 256;
