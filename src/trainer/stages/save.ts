/** save: a checkpoint of the actor (and critic) with the loader position and the KL controller. */
import type { TrainerParts } from "../parts.ts";

/** Saves at `step` when a store is configured; returns `timing_s/save_checkpoint`. */
export async function save(parts: TrainerParts, step: number): Promise<Record<string, number>> {
  if (!parts.checkpoints) return {};
  const t0 = performance.now();
  await parts.checkpoints.save(step, {
    global_step: step,
    data_loader: parts.trainLoader.state(),
    kl_ctrl: parts.klCtrl?.state() ?? null,
  });
  return { "timing_s/save_checkpoint": (performance.now() - t0) / 1000 };
}
