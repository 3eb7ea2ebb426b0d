/**
 * Advantage estimators (verl's `algorithm.adv_estimator`): the registry, the
 * shared helpers and `computeAdvantage`. Each estimator is one file in
 * estimators/ that registers itself; estimators/all.ts lists them.
 *
 * Every estimator maps `[B, R]` token-level rewards (scores minus the in-reward
 * KL penalty, if any) to `{ advantages, returns }`, both `[B, R]`.
 * Outcome estimators sum each row into one score and broadcast a per-sample
 * scalar back over the valid tokens.
 *
 * @module
 */

import { broadcastToTokens, groupStats, sequenceScores } from "./group.ts";
import { checkSameLength, like, type Mask, rowsOf, type Vec } from "./masked.ts";
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
  /** log π_old of each sampled token, `[B, R]` (the optimal token baselines) */
  oldLogProbs?: Vec;
  /** Σ_v π_old(v)² at each response position, `[B, R]` (the optimal token baselines) */
  sumPiSquared?: Vec;
  /** truncated rollout importance weights ρ̄, `[B, R]`; absent = no correction */
  rolloutIsWeights?: Vec;
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

/**
 * A registered estimator and what the trainer must build for it, so config checks and the
 * trainer's setup read the needs from here instead of keeping their own lists of names.
 */
export interface AdvantageEstimatorEntry {
  compute: AdvantageEstimator;
  /** values from a critic (gae) */
  critic?: boolean;
  /** several samples per prompt, grouped by uid (rollout.n > 1) */
  groups?: boolean;
  /** a greedy rollout per prompt whose reward is the baseline (remax) */
  greedyBaseline?: boolean;
  /** Σπ² per response token from the old_log_prob pass, besides the old log-probs */
  sumPiSquared?: boolean;
  /** `algorithm.*` keys the formula reads (config keys, for the docs table) */
  keys?: readonly string[];
  /** The formula in one line, for the docs table. */
  doc: string;
}

/** Estimators by verl name; each file in estimators/ registers one. */
export const ADV_ESTIMATORS: Registry<AdvantageEstimatorEntry> = new Registry(
  "advantage estimator",
);

/** Runs the estimator `name` (throws listing valid names when unknown). */
export function computeAdvantage(
  name: string,
  inputs: AdvantageInputs,
  options: AdvantageOptions = {},
): AdvantageResult {
  const fn = ADV_ESTIMATORS.get(name).compute;
  const B = rowsOf(inputs.tokenLevelRewards.length, inputs.R);
  for (const k of ["uids", "rewardBaselines"] as const) {
    const v = inputs[k];
    if (v !== undefined && v.length !== B) {
      throw new Error(`${k} has length ${v.length}, expected B = ${B}`);
    }
  }
  const sameShape: Record<string, { length: number }> = {
    tokenLevelRewards: inputs.tokenLevelRewards,
    responseMask: inputs.responseMask,
  };
  for (const k of ["values", "oldLogProbs", "sumPiSquared", "rolloutIsWeights"] as const) {
    const v = inputs[k];
    if (v !== undefined) sameShape[k] = v;
  }
  checkSameLength(sameShape);
  return fn(inputs, {
    gamma: options.gamma ?? 1,
    lam: options.lam ?? 1,
    epsilon: options.epsilon ?? 1e-6,
    normAdvByStdInGrpo: options.normAdvByStdInGrpo ?? true,
  });
}

/** The input an estimator needs, or an error naming it. */
export function need<T>(value: T | undefined, what: string, estimator: string): T {
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

/** Broadcasts one scalar per sample over its valid tokens; outcome returns equal advantages. */
export function outcome(inp: AdvantageInputs, scalar: Float64Array): AdvantageResult {
  const adv = broadcastToTokens(scalar, inp.responseMask, inp.R, like(inp.tokenLevelRewards));
  return { advantages: adv, returns: adv };
}

/** Per-sample scores and their group statistics by uid. */
export function groupedScores(inp: AdvantageInputs, name: string) {
  const uids = need(inp.uids, "uids [B]", name);
  const scores = sequenceScores(inp.tokenLevelRewards, inp.R);
  return { uids, scores, stats: groupStats(scores, uids) };
}

/** Zeroes x where the mask is 0 (in place). */
export function maskMul(x: Vec, mask: Mask): Vec {
  for (let i = 0; i < x.length; i++) if (mask[i] === 0) x[i] = 0;
  return x;
}

/** Undiscounted reward-to-go over valid tokens: G_t = Σ_{k≥t} r_k·m_k, `[B, R]` (f64). */
export function rewardToGo(rewards: Vec, mask: Mask, R: number): Float64Array {
  const B = rowsOf(rewards.length, R);
  const out = new Float64Array(rewards.length);
  for (let b = 0; b < B; b++) {
    let acc = 0;
    for (let t = b * R + R - 1; t >= b * R; t--) {
      if (mask[t] !== 0) acc += rewards[t];
      out[t] = acc;
    }
  }
  return out;
}
