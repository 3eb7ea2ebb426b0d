/** ReMax: reward-to-go minus the greedy rollout's reward. */
import { ADV_ESTIMATORS, need, rewardToGo } from "../advantage.ts";
import { like, rowsOf } from "../masked.ts";

// remax: G_t = Σ_{k≥t} r_k·m_k (undiscounted reward-to-go); A_t = G_t - baseline_b·m_t.
ADV_ESTIMATORS.register("remax", {
  greedyBaseline: true,
  doc: "G_t = Σ_{k≥t} r_k·m_k; A_t = G_t - (greedy response's reward)·m_t",
  compute: (inp) => {
    const baselines = need(inp.rewardBaselines, "rewardBaselines [B]", "remax");
    const { tokenLevelRewards: r, responseMask: mask, R } = inp;
    const B = rowsOf(r.length, R);
    if (baselines.length !== B) throw new Error(`rewardBaselines must be [B] = [${B}]`);
    const g = rewardToGo(r, mask, R);
    const returns = like(r), advantages = like(r);
    for (let i = 0; i < g.length; i++) {
      returns[i] = g[i];
      advantages[i] = g[i] - (mask[i] !== 0 ? baselines[Math.floor(i / R)] : 0);
    }
    return { advantages, returns };
  },
});
