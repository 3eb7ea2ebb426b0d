/**
 * A decoding linear layer and the RMSNorm that reads its output, as one op:
 * [y = x W^T + b (+ residual), rmsNorm(y, normWeight)] (o_proj then post_attention_layernorm;
 * down_proj then the next layer's input_layernorm or the final norm). Without autograd, when the
 * product splits K (few rows: decoding), its second pass also normalises each row
 * (shaders/splitk_rmsnorm.wgsl): one dispatch less per pair, both outputs equal to the split sum's
 * and rmsNorm's bit for bit. Otherwise it is `linear` then `rmsNorm`.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { isGradEnabled } from "../grad_mode.ts";
import { fmtShape, sameShape, shapeSize, Tensor } from "../tensor.ts";
import { grid1d, rowWorkgroupSize } from "./grid.ts";
import { linear } from "./matmul.ts";
import { gemm } from "./matmul_kernel.ts";
import { epilogueBuffers, epilogueEntry } from "./matmul_skinny.ts";
import { rmsNorm } from "./rmsnorm.ts";

/** Most columns one invocation of the fused pass owns (splitk_rmsnorm.wgsl writes 8 out). */
const MAX_PER = 8;

/**
 * Whether decoding fuses the pairs (benchmarks: before/after), and K splits forced on every
 * product that fuses (tests: a CPU adapter's products rarely split, so there nothing fuses).
 */
export const linearNormPolicy = { enabled: true, splits: null as number | null };

export interface LinearNormOptions {
  /** f32, the output's shape, added after the bias (the block's input). */
  residual?: Tensor | null;
  /** The norm's `rms_norm_eps`. [1e-6] */
  eps?: number;
  /** K splits of the product (tests force them; decoding's products choose their own). */
  splits?: number;
}

/** Whether the fused pass takes rows of `cols` (at most MAX_PER columns per invocation). */
function fits(cols: number): boolean {
  return cols > 0 && Math.ceil(cols / rowWorkgroupSize(cols)) <= MAX_PER;
}

/**
 * [y [..., out], normed [..., out]] with y = x W^T + b (+ residual) and normed = rmsNorm(y,
 * normWeight). Under autograd (an input that records a gradient) it is `linear` then `rmsNorm`
 * on the tape; without, the norm rides on the product's split sum when there is one.
 */
export function linearNorm(
  x: Tensor,
  weight: Tensor,
  bias: Tensor | null,
  normWeight: Tensor,
  options: LinearNormOptions = {},
): [Tensor, Tensor] {
  const residual = options.residual ?? null, eps = options.eps ?? 1e-6;
  const [n, k] = weight.shape;
  if (normWeight.rank !== 1 || normWeight.shape[0] !== n || normWeight.dtype !== "f32") {
    throw new Error(
      `linearNorm: the norm weight must be f32 [${n}] (the weight's rows), got ` +
        `${fmtShape(normWeight.shape)} ${normWeight.dtype} beside weight ${fmtShape(weight.shape)}`,
    );
  }
  const unfused = (): [Tensor, Tensor] => {
    const y = linear(x, weight, bias, { residual });
    return [y, rmsNorm(y, normWeight, { eps })];
  };
  const taped = isGradEnabled() && [x, weight, bias, residual].some((t) => t?.requiresGrad);
  const outShape = [...x.shape.slice(0, -1), n];
  // Operands `linear` would refuse go there, for its error naming them.
  const plain = weight.rank === 2 && x.rank >= 1 && x.shape.at(-1) === k && x.dtype !== "i32" &&
    (!bias || bias.rank === 1 && bias.shape[0] === n) &&
    (!residual || residual.dtype === "f32" && sameShape(residual.shape, outShape));
  if (taped || !plain || !linearNormPolicy.enabled || !fits(n)) return unfused();
  const m = shapeSize(x.shape.slice(0, -1));
  const y = Tensor.empty(outShape, "f32", "linear_norm");
  let normed: Tensor | null = null;
  const d = { batch: 1, m, n, k, transA: false, transB: true, strideA: 0, strideB: 0 };
  gemm(x, weight, y, d, {
    bias,
    residual,
    splits: options.splits ?? linearNormPolicy.splits ?? undefined,
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
  if (!fits(d.cols)) {
    throw new Error(`sumSplitsNorm: rows of ${d.cols} take over ${MAX_PER} columns a thread`);
  }
  const wg = rowWorkgroupSize(d.cols);
  gpu().dispatch({
    shader: "splitk_rmsnorm",
    entry: epilogueEntry(d.bias, d.residual),
    f16: d.bias?.dtype === "f16",
    defines: { WG: wg, PER: Math.ceil(d.cols / wg), BIAS_T: d.bias?.dtype ?? "f32" },
  }, {
    params: packParams([d.rows, d.cols, d.splits, { f32: d.eps }]),
    buffers: epilogueBuffers(
      [part.buffer, d.normWeight.buffer, out.y.buffer, out.normed.buffer],
      d.bias,
      d.residual,
    ),
    workgroups: grid1d(d.rows, 1),
  });
}
