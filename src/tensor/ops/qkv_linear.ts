/**
 * The q, k and v projections of attention in one dispatch for few rows without autograd
 * (decoding): [x Wq^T + bq, x Wk^T + bk, x Wv^T + bv], shaders/matmul_skinny_qkv.wgsl. The three
 * weights may have different row counts (grouped-query attention). Training keeps three
 * `linear`s, whose backward exists; this op refuses inputs whose gradient is being recorded.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import type { KernelSpec } from "../../gpu/mod.ts";
import { isGradEnabled, isRecomputedLater } from "../grad_mode.ts";
import { fmtShape, shapeSize, Tensor } from "../tensor.ts";
import { skinnyConfig, skinnyPolicy } from "./matmul_skinny.ts";

/** Threads along N (wgX, 4 weight rows each) and M (wgY, tm rows of x each), K per stage. */
export interface QkvLinearConfig {
  wgX: number;
  wgY: number;
  tm: number;
  bk: number;
}

/** Whether `decoderLayer` fuses the q, k and v projections. Mutable for benchmarks (before/after). */
export const qkvLinearPolicy = { enabled: true };

/** The three weights [N*, K] (f32 or f16, one dtype), in the order q, k, v. */
export type QkvWeights = readonly [Tensor, Tensor, Tensor];
/** The three biases [N*] (one dtype), or none. */
export type QkvBiases = readonly [Tensor | null, Tensor | null, Tensor | null];

export interface QkvLinearOptions {
  config?: QkvLinearConfig;
}

/** Storage buffers the biased entry binds: x, three weights, three outputs, three biases. */
const BIAS_BINDINGS = 10;

/**
 * The tile for M rows: the skinny kernel's thread layout with 4 weight rows per thread. A CPU
 * adapter runs few workgroups at once and compiles large unrolled tiles slowly: a small one.
 */
export function qkvLinearConfig(m: number): QkvLinearConfig {
  if (gpu().isCpuAdapter) return { wgX: 4, wgY: 4, tm: 1, bk: 16 };
  const c = skinnyConfig(m);
  return { wgX: c.wgX, wgY: c.wgY, tm: c.tm, bk: c.bk };
}

function checkConfig(c: QkvLinearConfig): void {
  const g = gpu();
  const bm = c.wgY * c.tm, bn = c.wgX * 4, nt = c.wgX * c.wgY;
  const shared = 2 * (bm + bn) * (c.bk / 4 + 1) * 16;
  const slots = (rows: number) => Math.ceil(rows * c.bk / 4 / nt);
  const ok = c.bk % 4 === 0 && c.bk > 0 && (c.tm === 1 || c.tm === 4) && slots(bm) <= 4 &&
    slots(bn) <= 4 && nt <= g.limits.maxComputeInvocationsPerWorkgroup &&
    shared <= g.limits.maxComputeWorkgroupStorageSize;
  if (!ok) throw new Error(`qkv_linear: config ${JSON.stringify(c)} is invalid on this device`);
}

const floatLike = (t: Tensor) => t.dtype === "f32" || (t.dtype === "f16" && gpu().hasF16);
const recorded = (ts: (Tensor | null | undefined)[]) =>
  isGradEnabled() && ts.some((t) => t?.requiresGrad);
const biasCount = (b: QkvBiases) => b.filter((t) => t !== null).length;

/**
 * Whether `qkvLinear` takes these operands: few rows (the skinny kernel's `maxM`), K % 4 == 0,
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
  const ts = [x, ...w, ...b];
  const nb = biasCount(b);
  return qkvLinearPolicy.enabled && k % 4 === 0 && x.size / k <= skinnyPolicy.maxM &&
    w.every((t) => t.rank === 2 && t.shape[1] === k && t.dtype === w[0].dtype) &&
    (nb === 0 || (nb === 3 && b.every((t) => t?.dtype === b[0]?.dtype) &&
      gpu().limits.maxStorageBuffersPerShaderStage >= BIAS_BINDINGS)) &&
    ts.every((t) => !t || floatLike(t)) && !recorded(ts) && !isRecomputedLater();
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
  const desc = [["x", x] as const, ...[...w, ...b].map((t, i) => [names[i], t] as const)]
    .filter((e): e is readonly [string, Tensor] => e[1] !== null)
    .map(([n, t]) => `${n} ${fmtShape(t.shape)} ${t.dtype}`).join(", ");
  const bad = (why: string) => new Error(`qkv_linear: ${why}: ${desc}`);
  if (recorded([x, ...w, ...b])) {
    throw bad("no backward; use three linear(x, w) under autograd");
  }
  for (const t of [x, ...w, ...b]) {
    if (t && !floatLike(t)) throw bad("operands must be f32 (or f16 where the GPU has shader-f16)");
  }
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
  checkConfig(c);
  const bn = c.wgX * 4;
  const [gq, gk, gv] = [nq, nk, nv].map((n) => Math.ceil(n / bn));
  const vec = (t: Tensor) => `vec4<${t.dtype}>`;
  const spec: KernelSpec = {
    shader: "matmul_skinny_qkv",
    entry: nb ? "main_bias" : "main",
    f16: [x, w[0], b[0]].some((t) => t?.dtype === "f16"),
    defines: {
      WG_X: c.wgX,
      WG_Y: c.wgY,
      TM: c.tm,
      BK: c.bk,
      X4: vec(x),
      W4: vec(w[0]),
      BIAS_T: b[0]?.dtype ?? "f32",
    },
  };
  const buffers = [x.buffer, ...w.map((t) => t.buffer), ...outs.map((t) => t.buffer)];
  for (const t of b) if (t) buffers.push(t.buffer);
  gpu().dispatch(spec, {
    params: packParams([m, k / 4, nq, nk, nv, gq, gk, 0]),
    buffers,
    workgroups: [gq + gk + gv, Math.ceil(m / (c.wgY * c.tm)), 1],
  });
  return [q, kk, v];
}
