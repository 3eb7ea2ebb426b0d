/** update_critic: value-loss epochs over shuffled mini-batches. */
import type { Tick } from "../../tracking/mod.ts";
import type { AdvBatch } from "../batch.ts";
import { updateCritic } from "../critic.ts";
import type { TrainerParts } from "../parts.ts";
import { microBatching } from "../util.ts";

export function updateCriticStage(
  parts: TrainerParts,
  batch: AdvBatch,
  options: { step: number; lr: number; onProgress?: Tick },
): Promise<Record<string, number>> {
  const c = parts.config.critic;
  const n = parts.config.actor_rollout_ref.rollout.n;
  return updateCritic(parts.critic!.model, parts.critic!.optimizer, batch, {
    ppoEpochs: c.ppo_epochs,
    miniBatchSize: c.ppo_mini_batch_size * n,
    ...microBatching(parts.config, "critic"),
    shuffle: c.shuffle,
    seed: parts.config.trainer.seed,
    step: options.step,
    lr: options.lr,
    onProgress: options.onProgress,
    gradClip: c.grad_clip,
    cliprangeValue: c.cliprange_value,
    lossAggMode: c.loss_agg_mode,
  });
}
