/**
 * The first half of a SwiGLU MLP in one dispatch for few rows without autograd (decoding):
 * silu(x Wg^T + bg) * (x Wu^T + bu), shaders/matmul_skinny_swiglu.wgsl. Training keeps
 * `swiglu(linear(x, Wg), linear(x, Wu))`, whose backward exists; this op refuses inputs whose
 * gradient is being recorded.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import type { KernelSpec } from "../../gpu/mod.ts";
import { isGradEnabled, isRecomputedLater } from "../grad_mode.ts";
import { fmtShape, shapeSize, Tensor } from "../tensor.ts";
import { skinnyConfig, skinnyPolicy } from "./matmul_skinny.ts";

/** Threads along N (wgX, 4 weight rows each) and M (wgY, tm rows of x each), K per stage. */
export interface SwigluLinearConfig {
  wgX: number;
  wgY: number;
  tm: number;
  bk: number;
}

/** Whether `decoderLayer` fuses gate, up and SwiGLU. Mutable for benchmarks (before/after). */
export const swigluLinearPolicy = { enabled: true };

export interface SwigluLinearOptions {
  biasGate?: Tensor | null;
  biasUp?: Tensor | null;
  config?: SwigluLinearConfig;
}

/**
 * The tile for M rows: the skinny kernel's thread layout with 4 rows of each weight per thread.
 * A CPU adapter runs few workgroups at once and compiles large unrolled tiles slowly: a small one.
 */
export function swigluLinearConfig(m: number): SwigluLinearConfig {
  if (gpu().isCpuAdapter) return { wgX: 4, wgY: 4, tm: 1, bk: 16 };
  const c = skinnyConfig(m);
  return { wgX: c.wgX, wgY: c.wgY, tm: c.tm, bk: c.bk };
}

function checkConfig(c: SwigluLinearConfig): void {
  const g = gpu();
  const bm = c.wgY * c.tm, bn = c.wgX * 4, nt = c.wgX * c.wgY;
  const shared = 2 * (bm + 2 * bn) * (c.bk / 4 + 1) * 16;
  const slots = (rows: number) => Math.ceil(rows * c.bk / 4 / nt);
  const ok = c.bk % 4 === 0 && c.bk > 0 && (c.tm === 1 || c.tm === 4) && slots(bm) <= 4 &&
    slots(bn) <= 4 && nt <= g.limits.maxComputeInvocationsPerWorkgroup &&
    shared <= g.limits.maxComputeWorkgroupStorageSize;
  if (!ok) throw new Error(`swiglu_linear: config ${JSON.stringify(c)} is invalid on this device`);
}

const floatLike = (t: Tensor) => t.dtype === "f32" || (t.dtype === "f16" && gpu().hasF16);
const recorded = (ts: (Tensor | null | undefined)[]) =>
  isGradEnabled() && ts.some((t) => t?.requiresGrad);

/**
 * Whether `swigluLinear` takes these operands: few rows (the skinny kernel's `maxM`), K % 4 == 0,
 * f32 or f16 operands, same-shaped weights, and no gradient recorded through any of them.
 */
export function swigluLinearApplies(
  x: Tensor,
  wGate: Tensor,
  wUp: Tensor,
  options: { biasGate?: Tensor | null; biasUp?: Tensor | null } = {},
): boolean {
  const k = x.shape[x.rank - 1];
  const ts = [x, wGate, wUp, options.biasGate, options.biasUp];
  return swigluLinearPolicy.enabled && k % 4 === 0 && x.size / k <= skinnyPolicy.maxM &&
    wGate.rank === 2 && fmtShape(wGate.shape) === fmtShape(wUp.shape) &&
    wGate.dtype === wUp.dtype && wGate.shape[1] === k &&
    (options.biasGate?.dtype ?? "f32") === (options.biasUp?.dtype ?? "f32") &&
    ts.every((t) => !t || floatLike(t)) && !recorded(ts) && !isRecomputedLater();
}

/**
 * out [..., N] f32 = silu(x Wg^T + bg) * (x Wu^T + bu); x [..., K] (K % 4 == 0), Wg and Wu [N, K]
 * (f32 or f16), biases [N]. One dispatch; no gradient (throws if one would be recorded).
 */
export function swigluLinear(
  x: Tensor,
  wGate: Tensor,
  wUp: Tensor,
  options: SwigluLinearOptions = {},
): Tensor {
  const bg = options.biasGate ?? null, bu = options.biasUp ?? null;
  const desc = [["x", x], ["w_gate", wGate], ["w_up", wUp], ["bias_gate", bg], ["bias_up", bu]]
    .filter((e): e is [string, Tensor] => e[1] !== null)
    .map(([n, t]) => `${n} ${fmtShape(t.shape)} ${t.dtype}`).join(", ");
  const bad = (why: string) => new Error(`swiglu_linear: ${why}: ${desc}`);
  if (recorded([x, wGate, wUp, bg, bu])) {
    throw bad("no backward; use swiglu(linear(x, w_gate), linear(x, w_up)) under autograd");
  }
  for (const t of [x, wGate, wUp, bg, bu]) {
    if (t && !floatLike(t)) throw bad("operands must be f32 (or f16 where the GPU has shader-f16)");
  }
  if (wGate.rank !== 2 || fmtShape(wGate.shape) !== fmtShape(wUp.shape)) {
    throw bad("w_gate and w_up must be the same 2-D [N, K]");
  }
  const [n, k] = wGate.shape;
  if (x.rank < 1 || x.shape[x.rank - 1] !== k) throw bad(`x must end in K=${k}`);
  if (k % 4 !== 0) throw bad(`K must be a multiple of 4, got K=${k}`);
  for (const b of [bg, bu]) {
    if (b && (b.rank !== 1 || b.shape[0] !== n)) throw bad(`biases must be [${n}]`);
  }
  if (bg && bu && bg.dtype !== bu.dtype) throw bad("both biases must have one dtype");
  if (wGate.dtype !== wUp.dtype) throw bad("w_gate and w_up must have one dtype");
  const m = shapeSize(x.shape.slice(0, -1));
  const out = Tensor.empty([...x.shape.slice(0, -1), n], "f32", "swiglu_linear");
  if (m === 0 || n === 0) return out;
  const c = options.config ?? swigluLinearConfig(m);
  checkConfig(c);
  // A lone bias runs with zeros in place of the other.
  const dtype = (bg ?? bu)?.dtype ?? "f32";
  const zero = (bg || bu) && !(bg && bu) ? Tensor.from(new Float32Array(n), [n], dtype) : null;
  const biasG = bg ?? zero, biasU = bu ?? zero;
  const vec = (t: Tensor) => `vec4<${t.dtype}>`;
  const spec: KernelSpec = {
    shader: "matmul_skinny_swiglu",
    entry: biasG ? "main_bias" : "main",
    f16: [x, wGate, biasG].some((t) => t?.dtype === "f16"),
    defines: {
      WG_X: c.wgX,
      WG_Y: c.wgY,
      TM: c.tm,
      BK: c.bk,
      X4: vec(x),
      W4: vec(wGate),
      BIAS_T: dtype,
    },
  };
  const buffers = [x.buffer, wGate.buffer, wUp.buffer, out.buffer];
  if (biasG && biasU) buffers.push(biasG.buffer, biasU.buffer);
  gpu().dispatch(spec, {
    params: packParams([m, n, k / 4]),
    buffers,
    workgroups: [Math.ceil(n / (c.wgX * 4)), Math.ceil(m / (c.wgY * c.tm)), 1],
  });
  zero?.dispose();
  return out;
}
