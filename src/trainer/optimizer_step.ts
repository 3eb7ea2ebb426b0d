/**
 * One optimizer step after gradient accumulation: global grad-norm clipping computed on the GPU,
 * one small readback of the norm (for `grad_norm` and the non-finite check), then AdamW — or no
 * update at all when the norm is not finite (the step is skipped and counted, as verl does).
 * Other small tensors the caller needs on the CPU (the update's summed loss statistics) ride along
 * in the same round trip, so a mini-batch costs one readback.
 */
import type { Tensor } from "../tensor/mod.ts";
import { zeroGrad } from "../tensor/mod.ts";
import { clipGradNorm } from "../tensor/mod.ts";
import { gpu } from "../gpu/mod.ts";
import type { AdamW } from "../nn/mod.ts";

export interface Optimizer {
  readonly adamw: AdamW;
  readonly params: Tensor[];
}

export interface OptimizerStepOptions {
  lr: number;
  gradClip: number;
  /** An f32 tensor to read back with the grad norm; its values come back as `read`. */
  readAlso?: Tensor;
}

export interface OptimizerStepResult {
  gradNorm: number;
  skipped: boolean;
  /** The values of `readAlso` (empty without it). */
  read: Float32Array;
}

export async function optimizerStep(
  opt: Optimizer,
  options: OptimizerStepOptions,
): Promise<OptimizerStepResult> {
  const extra = options.readAlso
    ? [{ buffer: options.readAlso.buffer, size: options.readAlso.byteSize }]
    : [];
  if (!opt.params.some((p) => p.grad)) {
    const bytes = extra.length ? await gpu().read(extra) : [];
    return { gradNorm: 0, skipped: true, read: new Float32Array(bytes[0] ?? new ArrayBuffer(0)) };
  }
  const clip = clipGradNorm(opt.params, options.gradClip > 0 ? options.gradClip : Infinity);
  // The norm is read before AdamW is recorded, as before: the kernel skips a non-finite norm by
  // itself (scale 0); the value is for logging and the skipped count.
  const [normBytes, extraBytes] = await gpu().read([
    { buffer: clip.buffer, size: 4 },
    ...extra,
  ]);
  const norm = new Float32Array(normBytes)[0];
  const skipped = !Number.isFinite(norm);
  if (!skipped) opt.adamw.step({ lr: options.lr, clip });
  clip.dispose();
  zeroGrad(opt.params);
  return {
    gradNorm: norm,
    skipped,
    read: new Float32Array(extraBytes ?? new ArrayBuffer(0)),
  };
}
