/**
 * Rollout importance sampling (verl's `algorithm.rollout_correction`): weights that correct for
 * the gap between the policy that sampled the responses (a worker's f16 copy, possibly
 * `max_staleness` updates old) and the policy the trainer recomputes (pi_old), truncated above.
 *
 *   token:    w_t = min(exp(logp_old_t - logp_rollout_t), C)
 *   sequence: w_t = min(exp(Σ_t' mask_t' (logp_old_t' - logp_rollout_t')), C) for every t of the row
 *
 * with C = `rollout_is_threshold`; the log ratio is clamped to [-20, 20] before exp, and padding
 * positions get weight 0. The weights multiply the per-token policy-gradient loss. For losses of
 * the form f(A_t, r_t) that are positively homogeneous in the advantage (vanilla PPO clip,
 * dual-clip: the clip branch depends only on the sign of A), w * f(A, r) = f(w * A, r), so
 * applying w to the advantages is exactly verl's weighting of pg_losses.
 */
import { checkSameLength, type Mask, type Vec } from "./masked.ts";

export type RolloutIsLevel = "token" | "sequence";

export interface RolloutIsResult {
  weights: Float32Array; // [B, R]
  /** rollout_corr/rollout_is_mean, _max, _min, _clipped_frac (over response tokens). */
  metrics: Record<string, number>;
}

const LOG_CLAMP = 20;

/** IS weights for old [B, R], rollout [B, R] log-probs under mask [B, R]. */
export function rolloutIsWeights(
  oldLogProbs: Vec,
  rolloutLogProbs: Vec,
  mask: Mask,
  o: { R: number; level: RolloutIsLevel; threshold: number },
): RolloutIsResult {
  checkSameLength({ oldLogProbs, rolloutLogProbs, mask });
  const R = o.R, B = mask.length / R;
  const w = new Float32Array(mask.length);
  const clampLog = (x: number) => Math.max(-LOG_CLAMP, Math.min(LOG_CLAMP, x));
  for (let b = 0; b < B; b++) {
    let seq = 0;
    for (let t = 0; t < R; t++) {
      const i = b * R + t;
      if (mask[i]) seq += oldLogProbs[i] - rolloutLogProbs[i];
    }
    const seqW = Math.min(Math.exp(clampLog(seq)), o.threshold);
    for (let t = 0; t < R; t++) {
      const i = b * R + t;
      if (!mask[i]) continue;
      w[i] = o.level === "sequence"
        ? seqW
        : Math.min(Math.exp(clampLog(oldLogProbs[i] - rolloutLogProbs[i])), o.threshold);
    }
  }
  let n = 0, sum = 0, max = -Infinity, min = Infinity, clipped = 0;
  for (let i = 0; i < w.length; i++) {
    if (!mask[i]) continue;
    n++;
    sum += w[i];
    max = Math.max(max, w[i]);
    min = Math.min(min, w[i]);
    if (w[i] >= o.threshold) clipped++;
  }
  return {
    weights: w,
    metrics: {
      "rollout_corr/rollout_is_mean": n ? sum / n : 0,
      "rollout_corr/rollout_is_max": n ? max : 0,
      "rollout_corr/rollout_is_min": n ? min : 0,
      "rollout_corr/rollout_is_clipped_frac": n ? clipped / n : 0,
    },
  };
}
