/**
 * save: a checkpoint of the trained models with the loader position and the KL controller;
 * resume: the reverse, at the start of fit() (PPO) and sftFit(). The step's metrics are logged and
 * flushed before its checkpoint is written, so a checkpoint never covers a step whose metrics could
 * be lost; the save's own duration is logged after it, as a second record of the step.
 */
import type { KlController, KlControllerState } from "../../algos/mod.ts";
import type { LoaderState } from "../../data/mod.ts";
import { type Logger, Progress } from "../../tracking/mod.ts";
import type { CheckpointStore } from "../parts.ts";

/** What save and resume touch: a PPO run's TrainerParts, or an SFT run's. */
export interface SaveParts {
  checkpoints: CheckpointStore | null;
  tracking: Logger;
  trainLoader: { state(): unknown; restore(state: unknown): void };
  /** PPO's KL controller (null or absent: none). */
  klCtrl?: Pick<KlController, "state" | "restore"> | null;
  print?: (line: string) => void;
}

/** Saves at `step` when a store is configured, then logs `timing_s/save_checkpoint`. */
export async function save(parts: SaveParts, step: number): Promise<void> {
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
export async function resume(parts: SaveParts): Promise<number> {
  const extra = await parts.checkpoints?.resume() ?? null;
  if (!extra) return 0;
  const print = parts.print ?? console.log;
  const step = extra.global_step as number;
  const saved = extra.data_loader as LoaderState;
  const now = (parts.trainLoader.state() as Partial<LoaderState>).seed;
  parts.trainLoader.restore(saved);
  // Only reachable when the seed's config key may change (resume_allowed_changes) or the
  // checkpoint holds no config: the order of the data changes from here on, said once.
  if (saved.seed !== undefined && now !== undefined && saved.seed !== now) {
    print(
      `notice: the checkpoint's data order was shuffled with seed ${saved.seed}; this run ` +
        `shuffles with seed ${now} from epoch ${saved.epoch} on, so its batches differ`,
    );
  }
  if (extra.kl_ctrl && parts.klCtrl) parts.klCtrl.restore(extra.kl_ctrl as KlControllerState);
  print(`resumed from global_step_${step}`);
  return step;
}
