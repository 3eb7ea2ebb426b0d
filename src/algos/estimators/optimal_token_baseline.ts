/** Optimal token baseline: a per-position group baseline weighted by accumulated path variance. */
import {
  ADV_ESTIMATORS,
  type AdvantageInputs,
  type AdvantageResult,
  need,
  rewardToGo,
} from "../advantage.ts";
import { groupIndex, sequenceLengths } from "../group.ts";
import { like } from "../masked.ts";
import { cumulativePathWeights, loneLongest, TOKEN_BASELINE_EPSILON } from "./token_baseline.ts";

// optimal_token_baseline: G_t = Σ_{k≥t} r_k·m_k (reward-to-go), W_t the cumulative path weight
// (token_baseline.ts). Per group g of N ≥ 2 samples and per position t:
//   B_t = Σ_{i∈g} G_{i,t}·W_{i,t}·m_{i,t} / (Σ_{i∈g} W_{i,t}·m_{i,t} + ε),  ε = 1e-8
// shared by the group's rows (a group of one: B = 0). A = (G - B)·m; returns = G.
// verl's default handle_zero_tail=false keeps the longest row's lone tail as it is.
export function optimalTokenBaseline(
  inp: AdvantageInputs,
  o: { handleZeroTail: boolean; epsilon: number },
): AdvantageResult {
  const name = "optimal_token_baseline";
  const uids = need(inp.uids, "uids [B]", name);
  const { R, responseMask: mask } = inp;
  const G = rewardToGo(inp.tokenLevelRewards, mask, R);
  const W = cumulativePathWeights(inp, name);
  const baseline = new Float64Array(G.length);
  const { groupOf, count } = groupIndex(uids);
  const members: number[][] = Array.from({ length: count }, () => []);
  groupOf.forEach((g, i) => members[g].push(i));
  const lengths = sequenceLengths(mask, R);
  for (const rows of members) {
    if (rows.length < 2) continue;
    for (let t = 0; t < R; t++) {
      let num = 0, den = 0;
      for (const i of rows) {
        if (mask[i * R + t] === 0) continue;
        num += G[i * R + t] * W[i * R + t];
        den += W[i * R + t];
      }
      for (const i of rows) baseline[i * R + t] = num / (den + o.epsilon);
    }
    const tail = o.handleZeroTail ? loneLongest(rows, lengths) : null;
    if (tail) baseline.fill(0, tail.row * R + tail.secondLength, tail.row * R + R);
  }
  const advantages = like(inp.tokenLevelRewards), returns = like(inp.tokenLevelRewards);
  for (let i = 0; i < G.length; i++) {
    advantages[i] = mask[i] !== 0 ? G[i] - baseline[i] : 0;
    returns[i] = G[i];
  }
  return { advantages, returns };
}

ADV_ESTIMATORS.register("optimal_token_baseline", {
  groups: true,
  sumPiSquared: true,
  doc: "A_t = G_t - B_t, B_t = Σ_g G_t·W_t / (Σ_g W_t + 1e-8) per position, W_t = " +
    "Σ_{j≤t} (1 - 2π_j + Σπ²_j) over valid tokens; a group of one: B = 0",
  compute: (inp) =>
    optimalTokenBaseline(inp, { handleZeroTail: false, epsilon: TOKEN_BASELINE_EPSILON }),
});
