/** old_log_prob: the actor's log-probs and entropies of the sampled responses (and Σπ²), or in
 * bypass mode the rollout's log-probs. */
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

/**
 * Bypass mode (`algorithm.rollout_correction.bypass_mode`, verl's apply_bypass_mode): no forward;
 * the rollout's log-probs are the old log-probs. No entropy comes out of it, so the step reports
 * actor/entropy only where the update computes one (entropy_coeff != 0, under the current policy).
 */
export function bypassOldLogProb(batch: ScoredBatch): LogProbBatch {
  if (!batch.rolloutLogProbs) {
    throw new Error(
      "algorithm.rollout_correction.bypass_mode=true needs the rollout's log-probs, which this " +
        "batch lacks: set actor_rollout_ref.rollout.calculate_log_probs=true",
    );
  }
  return {
    ...batch,
    oldLogProbs: batch.rolloutLogProbs,
    entropys: undefined,
    sumPiSquared: undefined,
  };
}
