/**
 * Shared parts of the optimal token baselines (optimal_token_baseline, tir_optimal_token_baseline):
 * the per-token path-variance weight and the longest-trajectory tail rule.
 */
import { type AdvantageInputs, need } from "../advantage.ts";
import { rowsOf } from "../masked.ts";

/** The constant verl adds to the baseline's denominator: B_t = Σ G·W / (Σ W + ε). */
export const TOKEN_BASELINE_EPSILON = 1e-8;

/**
 * W_t = Σ_{j≤t} w_j·m_j with w_j = (1 - 2π_j + Σπ²_j)·ρ̄_j², π_j = exp(old log-prob of the
 * sampled token), ρ̄ the rollout importance weight (1 when absent). `[B, R]` (f64).
 */
export function cumulativePathWeights(inp: AdvantageInputs, name: string): Float64Array {
  const lp = need(inp.oldLogProbs, "oldLogProbs [B, R]", name);
  const spp = need(inp.sumPiSquared, "sumPiSquared [B, R]", name);
  const rho = inp.rolloutIsWeights;
  const { R, responseMask: mask } = inp;
  const B = rowsOf(lp.length, R);
  const W = new Float64Array(B * R);
  for (let b = 0; b < B; b++) {
    let acc = 0;
    for (let t = b * R; t < (b + 1) * R; t++) {
      let w = 1 - 2 * Math.exp(lp[t]) + spp[t];
      if (rho) w *= rho[t] * rho[t];
      if (mask[t] !== 0) acc += w;
      W[t] = acc;
    }
  }
  return W;
}

/**
 * The row of a group whose length alone is the maximum, and the second-largest length; null
 * when the longest length is shared or equals the runner-up. Beyond the runner-up's length the
 * longest trajectory is alone, so its baseline there would be its own return (advantage ≈ 0);
 * `handle_zero_tail` sets that part of its baseline to 0 instead.
 */
export function loneLongest(
  rows: readonly number[],
  lengths: ArrayLike<number>,
): { row: number; secondLength: number } | null {
  const sorted = rows.map((i) => lengths[i]).sort((a, b) => a - b);
  const max = sorted[sorted.length - 1], second = sorted[sorted.length - 2];
  const longest = rows.filter((i) => lengths[i] === max);
  return longest.length === 1 && max > second ? { row: longest[0], secondLength: second } : null;
}
