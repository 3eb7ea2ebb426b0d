/** old_log_prob: the actor's log-probs and entropies of the sampled responses (and Σπ²). */
import { sumPiSquaredEnabled } from "../../config/mod.ts";
import { logProbTemperature } from "../../rollout/mod.ts";
import { computeLogProbs } from "../actor.ts";
import type { LogProbBatch, ScoredBatch } from "../batch.ts";
import type { TrainerParts } from "../parts.ts";
import { microBatching } from "../util.ts";

export async function oldLogProb(parts: TrainerParts, batch: ScoredBatch): Promise<LogProbBatch> {
  const r = await computeLogProbs(parts.actor.model, batch, {
    ...microBatching(parts.config, "rollout"),
    withEntropy: true,
    temperature: logProbTemperature(parts.config.actor_rollout_ref.rollout.temperature),
    withSumPiSquared: sumPiSquaredEnabled(parts.config),
  });
  return {
    ...batch,
    oldLogProbs: r.logProbs,
    entropys: r.entropys ?? undefined,
    sumPiSquared: r.sumPiSquared ?? undefined,
  };
}
