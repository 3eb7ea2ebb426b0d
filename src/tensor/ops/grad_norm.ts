/**
 * Global gradient norm and clip scale on the GPU: the optimizer step needs no readback to clip;
 * the trainer reads the 2-float result once per step for `grad_norm` and the non-finite check.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { registerOp } from "../autograd.ts";
import { Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";

const WG = 256;
const PER_THREAD = 8; // elements each invocation squares in the first pass
const PER_GROUP = WG * PER_THREAD;

registerOp("clip_grad_norm", "global L2 norm of gradients and clip scale (no autograd)");

/** Options of the grad norm. */
export interface GradNormOptions {
  /**
   * 1 / loss scale: the gradients hold loss-scaled values; the norm is theirs times this, and the
   * clip scale includes it, so AdamW steps with the unscaled gradients. [1]
   */
  inverseScale?: number;
}

/**
 * `[norm, scale]` of the given gradients: scale = min(1, maxNorm / (norm + 1e-6)) (times
 * `inverseScale`), and 0 when the norm is not finite (the AdamW kernel then skips the update).
 */
export function gradNormAndScale(
  grads: Tensor[],
  maxNorm = Infinity,
  options: GradNormOptions = {},
): Tensor {
  const inv = options.inverseScale ?? 1;
  if (!(inv > 0) || !Number.isFinite(inv)) {
    throw new Error(`clipGradNorm: inverseScale must be finite and > 0, got ${inv}`);
  }
  for (const g of grads) {
    if (g.dtype !== "f32") throw new Error(`clipGradNorm: gradient ${g} must be f32`);
  }
  const counts = grads.map((g) => Math.ceil(g.size / PER_GROUP));
  const total = Math.max(1, counts.reduce((a, b) => a + b, 0));
  const partials = Tensor.empty([total], "f32", "grad_norm_partials");
  const out = Tensor.empty([2], "f32", "grad_norm");
  let offset = 0;
  grads.forEach((g, i) => {
    if (g.size === 0) return;
    gpu().dispatch({ shader: "grad_norm", entry: "sumsq", defines: { WG, PER_THREAD } }, {
      params: packParams([g.size, offset, { f32: 0 }, { f32: 1 }]),
      buffers: [g.buffer, partials.buffer],
      workgroups: grid1d(g.size, PER_GROUP),
    });
    offset += counts[i];
  });
  const limit = Number.isFinite(maxNorm) ? maxNorm : 0;
  gpu().dispatch({ shader: "grad_norm_finish", defines: { WG } }, {
    params: packParams([offset, 0, { f32: limit }, { f32: inv }]),
    buffers: [partials.buffer, out.buffer],
    workgroups: [1],
  });
  partials.dispose();
  return out;
}

/** The gradients of `params` (those that have one), clipped at `maxNorm` by the AdamW step. */
export function clipGradNorm(
  params: Tensor[],
  maxNorm: number,
  options: GradNormOptions = {},
): Tensor {
  return gradNormAndScale(params.filter((p) => p.grad).map((p) => p.grad!), maxNorm, options);
}
