/**
 * A decoding linear layer and the RMSNorm that reads its output, as one op:
 * [y = x W^T + b (+ residual), rmsNorm(y, normWeight)] (o_proj then post_attention_layernorm;
 * down_proj then the next layer's input_layernorm). For few rows without autograd the product
 * runs on the skinny kernel, and when that splits K its second pass also normalises each row
 * (shaders/splitk_rmsnorm.wgsl): one dispatch less per fused pair, with both outputs equal to
 * the split sum's and rmsNorm's bit for bit. Elsewhere it is `linear` then `rmsNorm`.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { isGradEnabled } from "../grad_mode.ts";
import { fmtShape, shapeSize, Tensor } from "../tensor.ts";
import { grid1d, rowDefines } from "./grid.ts";
import { linear } from "./matmul.ts";
import { gemmSkinny, skinnyApplies, type SkinnyConfig } from "./matmul_skinny.ts";
import { rmsNorm } from "./rmsnorm.ts";
import { fusedOperandsFit } from "./skinny_fused.ts";

/** Whether decoding fuses the pairs. Mutable for benchmarks (before/after) and tests. */
export const linearNormPolicy = {
  enabled: true,
  /**
   * A CPU adapter, where the skinny kernel is not the faster product, fuses only with this tile
   * and K split count (tests: the production tiles take tens of seconds to compile there).
   */
  cpu: null as { config: SkinnyConfig; splits: number } | null,
};

export interface LinearNormOptions {
  residual?: Tensor | null;
  /** The norm's `rms_norm_eps`. [1e-6] */
  eps?: number;
  /** The skinny tile and K splits (tests force them). */
  config?: SkinnyConfig;
  splits?: number;
}

/** Whether `linearNorm` fuses for these operands (few rows, no gradient, the skinny kernel). */
export function linearNormApplies(x: Tensor, weight: Tensor, bias: Tensor | null = null): boolean {
  const k = weight.shape[1];
  const dims = { batch: 1, m: x.size / k, k, transA: false, transB: true };
  return linearNormPolicy.enabled && x.dtype === "f32" && fusedOperandsFit(x, [weight], [bias]) &&
    (skinnyApplies(x, weight, dims) || (gpu().isCpuAdapter && linearNormPolicy.cpu !== null));
}

/**
 * [y [..., out], normed [..., out]] with y = x W^T + b (+ residual) and normed = rmsNorm(y,
 * normWeight). Fused where `linearNormApplies`; otherwise `linear` and `rmsNorm` (on the tape if
 * the inputs are).
 */
export function linearNorm(
  x: Tensor,
  weight: Tensor,
  bias: Tensor | null,
  normWeight: Tensor,
  options: LinearNormOptions = {},
): [Tensor, Tensor] {
  const residual = options.residual ?? null, eps = options.eps ?? 1e-6;
  const fused = options.config !== undefined || linearNormApplies(x, weight, bias);
  if (!fused || isGradEnabled() && [x, weight, bias, residual].some((t) => t?.requiresGrad)) {
    const y = linear(x, weight, bias, { residual });
    return [y, rmsNorm(y, normWeight, { eps })];
  }
  const [n, k] = weight.shape;
  if (x.shape.at(-1) !== k || normWeight.shape.join() !== `${n}` || normWeight.dtype !== "f32") {
    throw new Error(
      `linearNorm: x ${fmtShape(x.shape)} must end in ${k} and the norm weight be f32 [${n}], ` +
        `got weight ${fmtShape(weight.shape)}, norm weight ${fmtShape(normWeight.shape)} ` +
        normWeight.dtype,
    );
  }
  const cpu = gpu().isCpuAdapter ? linearNormPolicy.cpu : null;
  const outShape = [...x.shape.slice(0, -1), n];
  const m = shapeSize(x.shape.slice(0, -1));
  const y = Tensor.empty(outShape, "f32", "linear_norm");
  let normed: Tensor | null = null;
  gemmSkinny(x, weight, y, { m, n, k }, {
    bias,
    residual,
    config: options.config ?? cpu?.config,
    splits: options.splits ?? cpu?.splits,
    sum: (part, splits) => {
      normed = Tensor.empty(outShape, "f32", "linear_norm.normed");
      sumSplitsNorm(part, { y, normed }, {
        rows: m,
        cols: n,
        splits,
        eps,
        bias,
        residual,
        normWeight,
      });
    },
  });
  return [y, normed ?? rmsNorm(y, normWeight, { eps })];
}

/**
 * y = sum over s of part [s, rows, cols] (+ bias) (+ residual), summed as `sumSplits` does, and
 * normed = rmsNorm(y, normWeight) as `rmsNorm`'s forward computes it: one row kernel.
 */
export function sumSplitsNorm(
  part: Tensor,
  out: { y: Tensor; normed: Tensor },
  d: {
    rows: number;
    cols: number;
    splits: number;
    eps: number;
    bias: Tensor | null;
    residual: Tensor | null;
    normWeight: Tensor;
  },
): void {
  if (d.rows === 0 || d.cols === 0) return;
  // A missing bias or residual binds the norm's weight, unread (the flags say so).
  const unread = d.normWeight.buffer;
  gpu().dispatch({
    shader: "splitk_rmsnorm",
    entry: "main",
    f16: d.bias?.dtype === "f16",
    defines: { ...rowDefines(d.cols), BIAS_T: d.bias?.dtype ?? "f32" },
  }, {
    params: packParams([
      d.rows,
      d.cols,
      d.splits,
      { f32: d.eps },
      d.bias ? 1 : 0,
      d.residual ? 1 : 0,
      0,
      0,
    ]),
    buffers: [
      part.buffer,
      d.bias?.buffer ?? unread,
      d.residual?.buffer ?? unread,
      d.normWeight.buffer,
      out.y.buffer,
      out.normed.buffer,
    ],
    workgroups: grid1d(d.rows, 1),
  });
}
