/**
 * The adapted linear layer, y = x W^T + b + s (x A^T) B^T, one op on the tape, as two GEMMs each
 * way with the low-rank product joined to the base one along K (`matmulCat`): forward
 * l = x A^T [N, r], y = [x | l] @ [W | s B]^T + b (+ residual); backward gl = g B [N, r],
 * dB = s g^T l, dA = s gl^T x, dx = [g | gl] @ [W ; s A]. No [N, out] or [N, in] temporary beyond
 * the output, no separate add. Under lora_dropout in a training pass l reads a dropped x, and the
 * input gradient's adapter term is dropped too, so that term stays a separate product there
 * (`droppedBranch`).
 */
import {
  accumulate,
  dropoutMasked,
  isGradEnabled,
  isRecomputedLater,
  linear,
  type LinearOptions,
  matmul,
  matmulCat,
  noGrad,
  record,
  registerOp,
  scaleInPlace,
  Tensor,
} from "../tensor/mod.ts";
import type { LoraPair } from "./lora.ts";

registerOp(
  "lora_linear",
  "y = x W^T + b + s (x A^T) B^T (+ residual), W and b frozen; grads to x, A [r, in], B [out, r] " +
    "(and the residual: the output's gradient)",
);

/**
 * y = x W^T + b, plus s (x A^T) B^T when an adapter is given. x [..., in] -> [..., out]. The
 * backward keeps only x and l = x A^T [N, r], so an adapted layer holds no activation of
 * [N, out] beyond the base linear's. `options.residual` goes into the GEMM's epilogue; its
 * gradient is g. With lora_dropout p in a training forward the branch reads d(x) = x * mask /
 * (1 - p) instead of x (l = d(x) A^T, dA = s (g B)^T d(x), dx = g W + s d(g B A)); the mask is
 * re-drawn, not stored.
 */
export function loraLinear(
  x: Tensor,
  w: Tensor,
  bias: Tensor | null,
  lora: LoraPair | null,
  options: LinearOptions = {},
): Tensor {
  if (!lora) return linear(x, w, bias, options);
  const residual = options.residual ?? null;
  if (w.requiresGrad || bias?.requiresGrad) {
    throw new Error(`lora_linear: the base weight ${w.label} must be frozen under an adapter`);
  }
  const { a, b, scale } = lora;
  const inF = w.shape[1], outF = w.shape[0], r = a.shape[0];
  const rows = x.size / inF;
  // PEFT's lora_dropout: on the adapter branch's input, in training forwards only (a
  // checkpointed segment's first forward is one: its recompute must see the same values).
  const training = (isGradEnabled() || isRecomputedLater()) && (a.requiresGrad || b.requiresGrad);
  const p = training ? lora.dropout : 0, seed = p > 0 ? lora.dropoutSeed() : 0;
  const drop = (t: Tensor) => p > 0 ? dropoutMasked(t, p, seed) : t;
  const outShape = [...x.shape.slice(0, -1), outF];
  const [y, low] = noGrad(() => {
    const xd = drop(x);
    const low = linear(xd, a); // [..., r]
    if (xd !== x) xd.dispose();
    const x2 = x.reshape([rows, inF]), l2 = low.reshape([rows, r]);
    const y2 = matmulCat({ a: x2, b: w, transB: true }, { a: l2, b, transB: true }, {
      scale,
      bias,
      residual,
    }); // [N, out]
    const y = y2.reshape(outShape);
    for (const t of [x2, l2, y2]) t.dispose();
    return [y, low];
  });
  const inputs = residual ? [x, a, b, residual] : [x, a, b];
  const out = record("lora_linear", inputs, y, (g) => {
    // 2-D views, disposed here so that x and l are released as soon as this backward ran.
    const g2 = g.reshape([rows, outF]), x2 = x.reshape([rows, inF]), l2 = low.reshape([rows, r]);
    const gb = b.requiresGrad ? matmul(g2, l2, { transA: true }) : null; // [out, r]
    if (gb) scaleInPlace(gb, scale);
    const gl = matmul(g2, b); // [N, r], without the scale: dA and dx take it
    const xd = drop(x2); // the forward's mask, drawn again
    const ga = a.requiresGrad ? matmul(gl, xd, { transA: true }) : null; // [r, in]
    if (ga) scaleInPlace(ga, scale);
    if (xd !== x2) xd.dispose();
    let gx: Tensor | null = null;
    if (x.requiresGrad) {
      const flat = p > 0
        ? droppedBranch(g2, w, gl, a, (t) => drop(t), scale)
        : matmulCat({ a: g2, b: w }, { a: gl, b: a }, { scale }); // [N, in]
      gx = flat.reshape(x.shape);
      flat.dispose();
    }
    for (const t of [g2, x2, l2, gl, low]) t.dispose();
    return residual ? [gx, ga, gb, residual.requiresGrad ? g : null] : [gx, ga, gb];
  });
  if (!out.node) low.dispose();
  return out;
}

/** dx [N, in] = g W + s d(gl A) under lora_dropout's mask d (gl = g B unscaled). */
function droppedBranch(
  g: Tensor,
  w: Tensor,
  gl: Tensor,
  a: Tensor,
  drop: (t: Tensor) => Tensor,
  scale: number,
): Tensor {
  const flat = matmul(g, w); // [N, in]
  const viaA = matmul(gl, a); // [N, in]
  const viaAd = drop(viaA);
  accumulate(flat, viaAd, scale);
  viaA.dispose();
  if (viaAd !== viaA) viaAd.dispose();
  return flat;
}
