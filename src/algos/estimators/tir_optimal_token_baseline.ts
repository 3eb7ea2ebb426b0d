/**
 * Optimal token baseline for multi-turn (tool-integrated) responses: trajectories are aligned by
 * their k-th generated token, so tool output between turns does not shift the comparison.
 */
import {
  ADV_ESTIMATORS,
  type AdvantageInputs,
  type AdvantageResult,
  need,
  rewardToGo,
} from "../advantage.ts";
import { sequenceLengths } from "../group.ts";
import { like, rowsOf } from "../masked.ts";
import { cumulativePathWeights, loneLongest, TOKEN_BASELINE_EPSILON } from "./token_baseline.ts";

// tir_optimal_token_baseline: G and W as in optimal_token_baseline, then each row's valid
// positions are packed: Ĝ_{i,k}, Ŵ_{i,k} for k < len_i (0 beyond). Rows with no valid token take
// no part. Per group of N ≥ 2 rows and per packed index k:
//   b_k = Σ_{i∈g} Ĝ_{i,k}·Ŵ_{i,k} / (Σ_{i∈g} Ŵ_{i,k} + ε),  ε = 1e-8  (a group of one: b = 0)
// handle_zero_tail (verl's default here: true) zeroes b_k for k ≥ the runner-up's length on the
// group's lone longest row. The k-th valid token of row i gets A = Ĝ_{i,k} - b_{i,k}; returns = G.
export function tirOptimalTokenBaseline(
  inp: AdvantageInputs,
  o: { handleZeroTail: boolean; epsilon: number },
): AdvantageResult {
  const name = "tir_optimal_token_baseline";
  const uids = need(inp.uids, "uids [B]", name);
  const { R, responseMask: mask } = inp;
  const B = rowsOf(mask.length, R);
  const G = rewardToGo(inp.tokenLevelRewards, mask, R);
  const W = cumulativePathWeights(inp, name);
  const lengths = sequenceLengths(mask, R);
  const positions: number[][] = []; // row -> its valid positions in order
  for (let b = 0; b < B; b++) {
    positions.push([]);
    for (let t = 0; t < R; t++) if (mask[b * R + t] !== 0) positions[b].push(b * R + t);
  }
  const groups = new Map<string, number[]>();
  uids.forEach((u, b) => lengths[b] > 0 && groups.set(u, [...(groups.get(u) ?? []), b]));
  const packedBaseline = positions.map((p) => new Float64Array(p.length));
  for (const rows of groups.values()) {
    if (rows.length < 2) continue;
    const L = Math.max(...rows.map((b) => lengths[b]));
    for (let k = 0; k < L; k++) {
      let num = 0, den = 0;
      for (const b of rows) {
        if (k >= lengths[b]) continue;
        const t = positions[b][k];
        num += G[t] * W[t];
        den += W[t];
      }
      const bk = num / (den + o.epsilon);
      for (const b of rows) if (k < lengths[b]) packedBaseline[b][k] = bk;
    }
    const tail = o.handleZeroTail ? loneLongest(rows, lengths) : null;
    if (tail) packedBaseline[tail.row].fill(0, tail.secondLength);
  }
  const advantages = like(inp.tokenLevelRewards), returns = like(inp.tokenLevelRewards);
  for (let i = 0; i < G.length; i++) returns[i] = G[i];
  positions.forEach((p, b) => p.forEach((t, k) => advantages[t] = G[t] - packedBaseline[b][k]));
  return { advantages, returns };
}

ADV_ESTIMATORS.register("tir_optimal_token_baseline", {
  groups: true,
  sumPiSquared: true,
  doc: "optimal_token_baseline over each row's k-th valid token instead of position t; " +
    "all-padding rows take no part; the lone longest row's tail past the runner-up gets B = 0",
  compute: (inp) =>
    tirOptimalTokenBaseline(inp, { handleZeroTail: true, epsilon: TOKEN_BASELINE_EPSILON }),
});
