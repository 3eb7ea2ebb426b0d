/**
 * save: a checkpoint of the actor (and critic) with the loader position and the KL controller;
 * resume: the reverse, at the start of fit(). The step's metrics are logged and flushed before its
 * checkpoint is written, so a checkpoint never covers a step whose metrics could be lost; the
 * save's own duration is logged after it, as a second record of the step.
 */
import type { KlControllerState } from "../../algos/mod.ts";
import { Progress } from "../../tracking/mod.ts";
import type { TrainerParts } from "../parts.ts";

/** Saves at `step` when a store is configured, then logs `timing_s/save_checkpoint`. */
export async function save(parts: TrainerParts, step: number): Promise<void> {
  if (!parts.checkpoints) return;
  parts.tracking.flush?.();
  const t0 = performance.now();
  const progress = new Progress(`save step ${step}`, 1);
  progress.update(0, "checkpoint");
  try {
    await parts.checkpoints.save(step, {
      global_step: step,
      data_loader: parts.trainLoader.state(),
      kl_ctrl: parts.klCtrl?.state() ?? null,
    });
  } finally {
    progress.done();
  }
  parts.tracking.log(step, { "timing_s/save_checkpoint": (performance.now() - t0) / 1000 });
}

/**
 * Restores the optimizers, the loader position and the KL controller from the checkpoint
 * `trainer.resume_mode` chose (checked at setup); returns its step, 0 when starting fresh.
 */
export async function resume(parts: TrainerParts): Promise<number> {
  const extra = await parts.checkpoints?.resume() ?? null;
  if (!extra) return 0;
  const step = extra.global_step as number;
  parts.trainLoader.restore(extra.data_loader);
  if (extra.kl_ctrl && parts.klCtrl) parts.klCtrl.restore(extra.kl_ctrl as KlControllerState);
  (parts.print ?? console.log)(`resumed from global_step_${step}`);
  return step;
}
