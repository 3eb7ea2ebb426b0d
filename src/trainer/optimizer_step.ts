/**
 * One optimizer step after gradient accumulation: global grad-norm clipping computed on the GPU,
 * AdamW recorded behind it, then one small readback of the norm (for `grad_norm` and the
 * non-finite check). A norm that is not finite makes AdamW's kernels leave the weights and moments
 * as they were: the step is skipped and counted, as verl does.
 * Other small tensors the caller needs on the CPU (the update's summed loss statistics) ride along
 * in the same round trip, so a mini-batch costs one readback. Under mixed precision the gradients
 * hold loss-scaled values: the norm pass unscales them (norm and clip see the true gradients) and
 * the same non-finite check drives the loss scaler (loss_scaler.ts): this is the one place a
 * non-finite step is detected, skipped and counted.
 */
import type { Tensor } from "../tensor/mod.ts";
import { backward, fill, zeroGrad } from "../tensor/mod.ts";
import { clipGradNorm } from "../tensor/mod.ts";
import { gpu } from "../gpu/mod.ts";
import type { AdamW } from "../nn/mod.ts";
import type { LossScaler } from "./loss_scaler.ts";

export interface Optimizer {
  readonly adamw: AdamW;
  readonly params: Tensor[];
  /** Mixed precision's dynamic loss scale; absent or null: no loss scaling (f32). */
  readonly scaler?: LossScaler | null;
}

/** What a backward multiplies the loss by under `opt` (its loss scale, else 1). */
export function lossScaleOf(opt: Optimizer): number {
  return opt.scaler?.scale ?? 1;
}

/** How many of an update's optimizer steps were skipped, and why. */
export interface SkipCounts {
  /** Steps skipped for a non-finite grad norm (`{role}/skipped_steps`). */
  skipped: number;
  /** Of those, the ones skipped under a loss scale above 1 (see OptimizerStepResult.overflow). */
  overflows: number;
}

/**
 * An update's step metrics: `{role}/skipped_steps`, and under loss scaling `{role}/loss_scale`
 * (the scale after the update's last optimizer step, the one the next backward uses, as
 * GradScaler.get_scale() reads) and `{role}/overflow_steps` (skips that were the scaler's).
 */
export function stepMetrics(role: string, opt: Optimizer, n: SkipCounts): Record<string, number> {
  const m: Record<string, number> = { [`${role}/skipped_steps`]: n.skipped };
  if (!opt.scaler) return m;
  m[`${role}/loss_scale`] = opt.scaler.scale;
  m[`${role}/overflow_steps`] = n.overflows;
  return m;
}

/**
 * Skipped optimizer steps in `m` (an update's metrics, from stepMetrics) that count towards
 * trainer.max_nonfinite_steps: every skip, less the overflows the loss scaler handled.
 */
export function failedSteps(m: Record<string, number>, role: string): number {
  return (m[`${role}/skipped_steps`] ?? 0) - (m[`${role}/overflow_steps`] ?? 0);
}

/**
 * backward(loss) with the loss multiplied by `opt`'s loss scale (the seed gradient is the scale,
 * so the loss value itself and the statistics computed from it are untouched).
 */
export function scaledBackward(loss: Tensor, opt: Optimizer): void {
  const s = lossScaleOf(opt);
  if (s === 1) return backward(loss);
  const seed = fill(loss.shape, s, "loss_scale");
  backward(loss, seed);
  seed.dispose();
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
  /**
   * Skipped under a loss scale above 1 (as it was for this step's backward, before the scaler
   * backs off): an overflow for the scaler to handle, not a failed update. A step that is not
   * finite at scale 1 or without loss scaling is not one.
   */
  overflow: boolean;
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
    const read = new Float32Array(bytes[0] ?? new ArrayBuffer(0));
    return { gradNorm: 0, skipped: true, overflow: false, read };
  }
  const maxNorm = options.gradClip > 0 ? options.gradClip : Infinity;
  const clip = clipGradNorm(opt.params, maxNorm, { inverseScale: opt.scaler?.inverse ?? 1 });
  // AdamW is recorded before the norm is read: its kernels skip a non-finite norm by themselves
  // (scale 0), so the GPU goes on from the norm to the update without waiting for the host; the
  // value read is for logging, the skipped count and the step count taken back.
  opt.adamw.step({ lr: options.lr, clip });
  const [normBytes, extraBytes] = await gpu().read([
    { buffer: clip.buffer, size: 4 },
    ...extra,
  ]);
  const norm = new Float32Array(normBytes)[0];
  const skipped = !Number.isFinite(norm);
  const overflow = skipped && lossScaleOf(opt) > 1; // read before the scaler backs off
  if (skipped) opt.adamw.uncountStep();
  opt.scaler?.update(!skipped);
  clip.dispose();
  zeroGrad(opt.params);
  return {
    gradNorm: norm,
    skipped,
    overflow,
    read: new Float32Array(extraBytes ?? new ArrayBuffer(0)),
  };
}
