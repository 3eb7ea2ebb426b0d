/** ref: the frozen reference's log-probs, when a KL term (loss or in-reward) uses them. */
import { logProbTemperature } from "../../rollout/mod.ts";
import { computeLogProbs } from "../actor.ts";
import type { LogProbBatch, RefBatch } from "../batch.ts";
import type { TrainerParts } from "../parts.ts";
import { microBatching } from "../util.ts";

export async function ref(parts: TrainerParts, batch: LogProbBatch): Promise<RefBatch> {
  if (!parts.ref) return { ...batch, refLogProbs: undefined };
  const r = await computeLogProbs(parts.ref, batch, {
    ...microBatching(parts.config, "ref"),
    withEntropy: false,
    temperature: logProbTemperature(parts.config.actor_rollout_ref.rollout.temperature),
  });
  return { ...batch, refLogProbs: r.logProbs };
}
