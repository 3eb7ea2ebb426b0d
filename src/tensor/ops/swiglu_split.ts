/**
 * The first half of a SwiGLU MLP off the tape for rows the fused skinny op does not take (more
 * than its few): up to a few hundred rows one tiled GEMM over both weights woven together, which
 * applies silu(g) * u itself (swiglu_woven.ts). Past them (or with weights of two types), the gate
 * and up products run as GEMMs, and where both split K, one pass sums both products' partials,
 * adds their biases and applies the activation (swiglu_split_sum.wgsl's `main_pair`) in place of
 * two split sums and the swiglu pass. Either way the result equals
 * `swiglu(linear(x, Wg, bg), linear(x, Wu, bu))` (with the same tile and K slices) bit for bit.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { isGradEnabled } from "../grad_mode.ts";
import { sameShape, shapeSize, Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";
import { linear } from "./matmul.ts";
import { gemm } from "./matmul_kernel.ts";
import { swiglu } from "./swiglu.ts";
import { biasPair } from "./swiglu_linear.ts";
import { swigluWoven, swigluWovenApplies } from "./swiglu_woven.ts";

const WG = 256;

/** Whether the pass is taken (benchmarks: before/after), and K splits forced on both products. */
export const swigluSplitPolicy = { enabled: true, splits: null as number | null };

export interface SwigluSplitOptions {
  biasGate?: Tensor | null;
  biasUp?: Tensor | null;
}

/** A split product's partials [splits, M, N], kept past the product (a view holds its buffer). */
interface Partials {
  part: Tensor;
  splits: number;
}

/**
 * silu(x Wg^T + bg) * (x Wu^T + bu) [..., N] for x [..., K], Wg and Wu [N, K]; no gradient (inputs
 * that record one go through `swiglu(linear, linear)` on the tape).
 */
export function swigluProducts(
  x: Tensor,
  wGate: Tensor,
  wUp: Tensor,
  options: SwigluSplitOptions = {},
): Tensor {
  const bg = options.biasGate ?? null, bu = options.biasUp ?? null;
  const unfused = () => swiglu(linear(x, wGate, bg), linear(x, wUp, bu));
  const taped = isGradEnabled() && [x, wGate, wUp, bg, bu].some((t) => t?.requiresGrad);
  const [n, k] = wGate.shape;
  // Operands `linear` would refuse (or differing biases' types) go there.
  const plain = wGate.rank === 2 && sameShape(wGate.shape, wUp.shape) && x.rank >= 1 &&
    x.shape.at(-1) === k && x.dtype !== "i32" &&
    (bg?.dtype ?? bu?.dtype) === (bu?.dtype ?? bg?.dtype) &&
    [bg, bu].every((b) => !b || b.rank === 1 && b.shape[0] === n);
  if (taped || !plain || !swigluSplitPolicy.enabled) return unfused();
  const lead = x.shape.slice(0, -1), m = shapeSize(lead);
  const splits = swigluSplitPolicy.splits ?? undefined;
  if (swigluWovenApplies(m) && wGate.dtype === wUp.dtype) {
    return swigluWoven(x, wGate, wUp, { biasGate: bg, biasUp: bu, splits });
  }
  const d = { batch: 1, m, n, k, transA: false, transB: true, strideA: 0, strideB: 0 };
  const product = (w: Tensor, bias: Tensor | null): [Tensor, Partials | null] => {
    const out = Tensor.empty([...lead, n], "f32", "swiglu_products");
    let kept: Partials | null = null;
    gemm(x, w, out, d, {
      bias,
      splits,
      sum: (part, s) => void (kept = { part: part.reshape(part.shape), splits: s }),
    });
    return [out, kept];
  };
  const [g, pg] = product(wGate, bg);
  const [u, pu] = product(wUp, bu);
  if (!pg && !pu) return swiglu(g, u); // neither split: both wrote their outputs
  // Two products of one shape and options run one plan.
  if (!pg || !pu || pg.splits !== pu.splits) {
    throw new Error(
      `swigluProducts: gate and up split K differently (${pg?.splits}, ${pu?.splits})`,
    );
  }
  g.dispose();
  u.dispose();
  const y = Tensor.empty([...lead, n], "f32", "swiglu_products");
  const pair = biasPair(bg, bu, n), dtype = pair?.dtype ?? "f32";
  const biases = pair ? [pair.gate.buffer, pair.up.buffer] : [null, null];
  gpu().dispatch({
    shader: "swiglu_split_sum",
    entry: pair ? "main_pair_bias" : "main_pair",
    f16: dtype === "f16",
    defines: { WG, BIAS_T: dtype },
  }, {
    params: packParams([m * n, n, pg.splits, 0]),
    buffers: [pg.part.buffer, y.buffer, ...biases, pu.part.buffer],
    workgroups: grid1d(m * n, WG),
  });
  for (const t of [pg.part, pu.part, pair?.zero]) t?.dispose();
  return y;
}
