/**
 * rollout_corr (`algorithm.rollout_correction.rollout_is`): truncated importance weights of the
 * recomputed policy against the rollout policy, applied to the advantages (exactly verl's
 * weighting of the policy-gradient loss for losses linear in the advantage; see
 * src/algos/rollout_is.ts).
 */
import { rolloutIsWeights } from "../../algos/mod.ts";
import type { AdvBatch } from "../batch.ts";
import type { TrainerParts } from "../parts.ts";

export function rolloutCorrection(
  parts: TrainerParts,
  batch: AdvBatch,
): { batch: AdvBatch; metrics: Record<string, number> } {
  const rc = parts.config.algorithm.rollout_correction;
  // Bypass mode: ppo_clip's ratio is already against the rollout policy, and reinforce weighs by
  // the current policy inside its loss (src/algos/policy_losses/reinforce.ts).
  if (rc.rollout_is === null || rc.bypass_mode) return { batch, metrics: {} };
  if (!batch.rolloutLogProbs) {
    throw new Error(
      "algorithm.rollout_correction.rollout_is needs the rollout's log-probs: set " +
        "actor_rollout_ref.rollout.calculate_log_probs=true",
    );
  }
  const { weights, metrics } = rolloutIsWeights(
    batch.oldLogProbs,
    batch.rolloutLogProbs,
    batch.responseMask,
    {
      R: batch.responseLength,
      level: rc.rollout_is as "token" | "sequence",
      threshold: rc.rollout_is_threshold,
    },
  );
  const advantages = batch.advantages.map((a, i) => a * weights[i]);
  return { batch: { ...batch, advantages }, metrics };
}
