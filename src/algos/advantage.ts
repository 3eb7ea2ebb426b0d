/**
 * Advantage estimators (verl's `algorithm.adv_estimator`), registered by name
 * in `ADV_ESTIMATORS` and called through `computeAdvantage`.
 *
 * Every estimator maps `[B, R]` token-level rewards (scores minus the in-reward
 * KL penalty, if any) to `{ advantages, returns }`, both `[B, R]`.
 * Outcome estimators sum each row into one score and broadcast a per-sample
 * scalar back over the valid tokens.
 *
 * @module
 */

import { broadcastToTokens, groupStats, sequenceLengths, sequenceScores } from "./group.ts";
import { checkSameLength, like, type Mask, maskedWhiten, rowsOf, type Vec } from "./masked.ts";
import { Registry } from "../tensor/mod.ts";

/** Tensors an estimator may read. Shapes: `[B, R]` unless noted. */
export interface AdvantageInputs {
  /** response length R (columns); B = tokenLevelRewards.length / R */
  R: number;
  tokenLevelRewards: Vec;
  responseMask: Mask;
  /** critic values (gae) */
  values?: Vec;
  /** group id per sample, `[B]` (grpo, rloo, opo, gpg, reinforce_plus_plus_baseline) */
  uids?: readonly string[];
  /** greedy-rollout reward per sample, `[B]` (remax) */
  rewardBaselines?: Vec;
}

/** Scalars, named after verl's `algorithm.*` keys. */
export interface AdvantageOptions {
  /** discount (algorithm.gamma), default 1 */
  gamma?: number;
  /** GAE lambda (algorithm.lam), default 1 */
  lam?: number;
  /** added to the group std before dividing, default 1e-6 */
  epsilon?: number;
  /** algorithm.norm_adv_by_std_in_grpo, default true; false is Dr.GRPO */
  normAdvByStdInGrpo?: boolean;
}

/** Both `[B, R]`, same float type as tokenLevelRewards. */
export interface AdvantageResult {
  advantages: Vec;
  returns: Vec;
}

/** An estimator; options arrive with defaults filled in. */
export type AdvantageEstimator = (
  inputs: AdvantageInputs,
  options: Required<AdvantageOptions>,
) => AdvantageResult;

/** Estimators by verl name. */
export const ADV_ESTIMATORS: Registry<AdvantageEstimator> = new Registry("advantage estimator");

/** Runs the estimator `name` (throws listing valid names when unknown). */
export function computeAdvantage(
  name: string,
  inputs: AdvantageInputs,
  options: AdvantageOptions = {},
): AdvantageResult {
  const fn = ADV_ESTIMATORS.get(name);
  rowsOf(inputs.tokenLevelRewards.length, inputs.R);
  checkSameLength({
    tokenLevelRewards: inputs.tokenLevelRewards,
    responseMask: inputs.responseMask,
  });
  return fn(inputs, {
    gamma: options.gamma ?? 1,
    lam: options.lam ?? 1,
    epsilon: options.epsilon ?? 1e-6,
    normAdvByStdInGrpo: options.normAdvByStdInGrpo ?? true,
  });
}

function need<T>(value: T | undefined, what: string, estimator: string): T {
  if (value === undefined) throw new Error(`advantage estimator "${estimator}" needs ${what}`);
  return value;
}

/**
 * GAE reverse scan, one sequence at a time (the layout a GPU thread per row
 * uses). Not whitened. Positions with mask 0 (padding, tool output) neither
 * update the carried next value nor the carried advantage:
 *   δ_t = r_t + γ·V_next - V_t;  â_t = δ_t + γλ·A_next
 *   valid t:   V_next <- V_t, A_next <- â_t;   A_t = A_next (carried when invalid)
 *   returns_t = A_t + V_t
 */
export function gaeScan(
  rewards: Vec,
  values: Vec,
  mask: Mask,
  R: number,
  opts: { gamma: number; lam: number },
): AdvantageResult {
  const B = rowsOf(rewards.length, R);
  const advantages = like(rewards), returns = like(rewards);
  const { gamma, lam } = opts;
  for (let b = 0; b < B; b++) {
    let nextValue = 0, lastGae = 0;
    for (let t = b * R + R - 1; t >= b * R; t--) {
      if (mask[t] !== 0) {
        lastGae = rewards[t] + gamma * nextValue - values[t] + gamma * lam * lastGae;
        nextValue = values[t];
      }
      advantages[t] = lastGae;
      returns[t] = lastGae + values[t];
    }
  }
  return { advantages, returns };
}

/** Column-at-a-time reference for `gaeScan`, the loop order verl uses (all rows per t). */
export function gaeScanReference(
  rewards: Vec,
  values: Vec,
  mask: Mask,
  R: number,
  opts: { gamma: number; lam: number },
): AdvantageResult {
  const B = rowsOf(rewards.length, R);
  const { gamma, lam } = opts;
  const nextValues = new Float64Array(B), lastGaeLam = new Float64Array(B);
  const advantages = like(rewards), returns = like(rewards);
  for (let t = R - 1; t >= 0; t--) {
    for (let b = 0; b < B; b++) {
      const i = b * R + t, m = mask[i] !== 0 ? 1 : 0;
      const delta = rewards[i] + gamma * nextValues[b] - values[i];
      const gae = delta + gamma * lam * lastGaeLam[b];
      nextValues[b] = values[i] * m + (1 - m) * nextValues[b];
      lastGaeLam[b] = gae * m + (1 - m) * lastGaeLam[b];
      advantages[i] = lastGaeLam[b];
      returns[i] = advantages[i] + values[i];
    }
  }
  return { advantages, returns };
}

// gae: returns from the raw scan, advantages whitened over valid tokens.
ADV_ESTIMATORS.register("gae", (inp, o) => {
  const values = need(inp.values, "values [B, R]", "gae");
  checkSameLength({ tokenLevelRewards: inp.tokenLevelRewards, values });
  const scan = gaeScan(inp.tokenLevelRewards, values, inp.responseMask, inp.R, o);
  return { advantages: maskedWhiten(scan.advantages, inp.responseMask), returns: scan.returns };
});

function outcome(inp: AdvantageInputs, scalar: Float64Array): AdvantageResult {
  const adv = broadcastToTokens(scalar, inp.responseMask, inp.R, like(inp.tokenLevelRewards));
  return { advantages: adv, returns: adv };
}

function groupedScores(inp: AdvantageInputs, name: string) {
  const uids = need(inp.uids, "uids [B]", name);
  const scores = sequenceScores(inp.tokenLevelRewards, inp.R);
  return { uids, scores, stats: groupStats(scores, uids) };
}

// grpo: a_b = (s_b - mean_g) / (std_g + ε), or s_b - mean_g without std (Dr.GRPO).
ADV_ESTIMATORS.register("grpo", (inp, o) => {
  const { scores, stats } = groupedScores(inp, "grpo");
  const a = scores.map((s, b) =>
    o.normAdvByStdInGrpo ? (s - stats.mean[b]) / (stats.std[b] + o.epsilon) : s - stats.mean[b]
  );
  return outcome(inp, a);
});

// rloo: leave-one-out baseline, a_b = n/(n-1)·(s_b - mean_g) = s_b - mean of the others;
// a group of one keeps its raw score.
ADV_ESTIMATORS.register("rloo", (inp) => {
  const { scores, stats } = groupedScores(inp, "rloo");
  const a = scores.map((s, b) => {
    const n = stats.size[b];
    return n > 1 ? (s * n) / (n - 1) - (stats.mean[b] * n) / (n - 1) : s;
  });
  return outcome(inp, a);
});

// opo: length-weighted baseline, bsl_g = Σ len_i·s_i / Σ len_i (0 for a group of one).
ADV_ESTIMATORS.register("opo", (inp) => {
  const { uids, scores, stats } = groupedScores(inp, "opo");
  const lens = sequenceLengths(inp.responseMask, inp.R);
  const num = new Map<string, number>(), den = new Map<string, number>();
  uids.forEach((u, b) => {
    num.set(u, (num.get(u) ?? 0) + lens[b] * scores[b]);
    den.set(u, (den.get(u) ?? 0) + lens[b]);
  });
  // An all-padding group has Σ len = 0; verl would divide 0/0, we use baseline 0.
  const a = scores.map((s, b) => {
    const d = den.get(uids[b])!;
    return stats.size[b] === 1 || d === 0 ? s : s - num.get(uids[b])! / d;
  });
  return outcome(inp, a);
});

// gpg: α = B / max(#{b : s_b ≠ 0}, 1);  a_b = α·(s_b - mean_g) / f_norm, f_norm = 1.
ADV_ESTIMATORS.register("gpg", (inp) => {
  const { scores, stats } = groupedScores(inp, "gpg");
  const nonZero = scores.reduce((n, s) => n + (s !== 0 ? 1 : 0), 0);
  const alpha = scores.length / Math.max(nonZero, 1);
  return outcome(inp, scores.map((s, b) => alpha * (s - stats.mean[b])));
});

// reinforce_plus_plus_baseline: (s_b - mean_g) on every valid token, whitened over the batch.
ADV_ESTIMATORS.register("reinforce_plus_plus_baseline", (inp) => {
  const { scores, stats } = groupedScores(inp, "reinforce_plus_plus_baseline");
  const centred = outcome(inp, scores.map((s, b) => s - stats.mean[b])).advantages;
  const adv = maskMul(maskedWhiten(centred, inp.responseMask), inp.responseMask);
  return { advantages: adv, returns: adv };
});

// reinforce_plus_plus: G_t = r_t + γ·G_{t+1}, where the running return is zeroed after every
// position with mask 0 (verl's "reset after EOS"; tool output in the middle resets it too).
// Advantages are G whitened over valid tokens and zeroed elsewhere; returns are G.
ADV_ESTIMATORS.register("reinforce_plus_plus", (inp, o) => {
  const { tokenLevelRewards: r, responseMask: mask, R } = inp;
  const B = rowsOf(r.length, R);
  const returns = like(r);
  for (let b = 0; b < B; b++) {
    let running = 0;
    for (let t = b * R + R - 1; t >= b * R; t--) {
      running = r[t] + o.gamma * running;
      returns[t] = running;
      if (mask[t] === 0) running = 0;
    }
  }
  return { advantages: maskMul(maskedWhiten(returns, mask), mask), returns };
});

// remax: G_t = Σ_{k≥t} r_k·m_k (undiscounted reward-to-go); A_t = G_t - baseline_b·m_t.
ADV_ESTIMATORS.register("remax", (inp) => {
  const baselines = need(inp.rewardBaselines, "rewardBaselines [B]", "remax");
  const { tokenLevelRewards: r, responseMask: mask, R } = inp;
  const B = rowsOf(r.length, R);
  if (baselines.length !== B) throw new Error(`rewardBaselines must be [B] = [${B}]`);
  const returns = like(r), advantages = like(r);
  for (let b = 0; b < B; b++) {
    let acc = 0;
    for (let t = b * R + R - 1; t >= b * R; t--) {
      if (mask[t] !== 0) acc += r[t];
      returns[t] = acc;
      advantages[t] = acc - (mask[t] !== 0 ? baselines[b] : 0);
    }
  }
  return { advantages, returns };
});

function maskMul(x: Vec, mask: Mask): Vec {
  for (let i = 0; i < x.length; i++) if (mask[i] === 0) x[i] = 0;
  return x;
}
