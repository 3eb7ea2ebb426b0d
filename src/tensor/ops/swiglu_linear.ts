/**
 * The first half of a SwiGLU MLP in one dispatch for few rows without autograd (decoding):
 * silu(x Wg^T + bg) * (x Wu^T + bu), shaders/matmul_skinny_swiglu.wgsl. Training keeps
 * `swiglu(linear(x, Wg), linear(x, Wu))`, whose backward exists; this op refuses inputs whose
 * gradient is being recorded.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { type DType, sameShape, shapeSize, Tensor } from "../tensor.ts";
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

/** Threads along N (wgX, 4 rows of each weight each) and M (wgY, tm rows of x each), K per stage. */
export type SwigluLinearConfig = FusedSkinnyConfig;

/**
 * Whether `decoderLayer` fuses gate, up and SwiGLU, and whether a fused product of few blocks
 * splits K. Mutable for benchmarks (before/after).
 */
export const swigluLinearPolicy = { enabled: true, splitK: true };

export interface SwigluLinearOptions {
  biasGate?: Tensor | null;
  biasUp?: Tensor | null;
  config?: SwigluLinearConfig;
  /** K splits (tests force them); default: enough blocks to fill the GPU (`fusedSplitK`). */
  splits?: number;
}

/** The tile for M rows (skinny_fused.ts): 4 rows of each weight per thread. */
export const swigluLinearConfig: (m: number) => SwigluLinearConfig = fusedSkinnyConfig;

/**
 * Whether `swigluLinear` takes these operands: few rows (`skinnyMaxM`), K % 4 == 0,
 * f32 or f16 operands, same-shaped weights, and no gradient recorded through any of them.
 */
export function swigluLinearApplies(
  x: Tensor,
  wGate: Tensor,
  wUp: Tensor,
  options: { biasGate?: Tensor | null; biasUp?: Tensor | null } = {},
): boolean {
  const k = x.shape[x.rank - 1];
  const biases = [options.biasGate, options.biasUp];
  return swigluLinearPolicy.enabled && fusedOperandsFit(x, [wGate, wUp], biases) &&
    wGate.rank === 2 &&
    sameShape(wGate.shape, wUp.shape) &&
    wGate.dtype === wUp.dtype && wGate.shape[1] === k &&
    (options.biasGate?.dtype ?? "f32") === (options.biasUp?.dtype ?? "f32");
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
  const bad = checkFusedOperands(
    [["x", x], ["w_gate", wGate], ["w_up", wUp], ["bias_gate", bg], ["bias_up", bu]],
    {
      op: "swiglu_linear",
      backward: "no backward; use swiglu(linear(x, w_gate), linear(x, w_up)) under autograd",
    },
  );
  if (wGate.rank !== 2 || !sameShape(wGate.shape, wUp.shape)) {
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
  checkFusedConfig(c, { op: "swiglu_linear", weightTiles: 2 });
  const pair = biasPair(bg, bu, n);
  const biasG = pair?.gate ?? null, dtype = pair?.dtype ?? "f32";
  const spec = fusedSkinnySpec(c, {
    shader: "matmul_skinny_swiglu",
    entry: biasG ? "main_bias" : "main",
    x,
    w: wGate,
    bias: biasG,
  });
  const cols = Math.ceil(n / (c.wgX * 4)), rows = Math.ceil(m / (c.wgY * c.tm));
  const { splits, split4 } = fusedSplitK(k, c, {
    blocks: cols * rows,
    auto: swigluLinearPolicy.splitK,
    forced: options.splits,
  });
  const params = packParams([m, n, k / 4, splits > 1 ? split4 : k / 4]);
  const biases = pair ? [pair.gate.buffer, pair.up.buffer] : [];
  if (splits === 1) {
    gpu().dispatch(spec, {
      params,
      buffers: [x.buffer, wGate.buffer, wUp.buffer, out.buffer, ...biases],
      workgroups: [cols, rows, 1],
    });
  } else {
    const part = Tensor.empty([splits, 2, m, n], "f32", "swiglu_linear.partial");
    gpu().dispatch({ ...spec, entry: "main_split" }, {
      params,
      buffers: [x.buffer, wGate.buffer, wUp.buffer, part.buffer],
      workgroups: [cols, rows, splits],
    });
    gpu().dispatch({
      shader: "swiglu_split_sum",
      entry: biasG ? "main_bias" : "main",
      f16: dtype === "f16",
      defines: { WG: SUM_WG, BIAS_T: dtype },
    }, {
      params: packParams([m * n, n, splits, 0]),
      buffers: [part.buffer, out.buffer, ...biases],
      workgroups: grid1d(m * n, SUM_WG),
    });
    part.dispose();
  }
  pair?.zero?.dispose();
  return out;
}

const SUM_WG = 256;

/**
 * The gate and up biases for kernels that bind both or neither (null: neither given). A lone
 * bias is paired with zeros of its dtype, `zero`, for the caller to dispose after its dispatches.
 */
export function biasPair(
  bg: Tensor | null,
  bu: Tensor | null,
  n: number,
): { gate: Tensor; up: Tensor; dtype: DType; zero: Tensor | null } | null {
  const given = bg ?? bu;
  if (!given) return null;
  const zero = bg && bu ? null : Tensor.from(new Float32Array(n), [n], given.dtype);
  return { gate: bg ?? zero!, up: bu ?? zero!, dtype: given.dtype, zero };
}
