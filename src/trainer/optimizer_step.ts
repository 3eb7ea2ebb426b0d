/**
 * One optimizer step after gradient accumulation: global grad-norm clipping computed on the GPU,
 * one small readback of the norm (for `grad_norm` and the non-finite check), then AdamW — or no
 * update at all when the norm is not finite (the step is skipped and counted, as verl does).
 */
import type { Tensor } from "../tensor/mod.ts";
import { zeroGrad } from "../tensor/mod.ts";
import { clipGradNorm } from "../tensor/mod.ts";
import type { AdamW } from "../nn/mod.ts";

export interface Optimizer {
  readonly adamw: AdamW;
  readonly params: Tensor[];
}

export async function optimizerStep(
  opt: Optimizer,
  options: { lr: number; gradClip: number },
): Promise<{ gradNorm: number; skipped: boolean }> {
  if (!opt.params.some((p) => p.grad)) return { gradNorm: 0, skipped: true };
  const clip = clipGradNorm(opt.params, options.gradClip > 0 ? options.gradClip : Infinity);
  const norm = (await clip.toArray())[0];
  const skipped = !Number.isFinite(norm);
  // The kernel also skips on a non-finite norm (scale 0); the readback is for logging.
  if (!skipped) opt.adamw.step({ lr: options.lr, clip });
  clip.dispose();
  zeroGrad(opt.params);
  return { gradNorm: norm, skipped };
}
