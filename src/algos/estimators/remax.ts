/** ReMax: reward-to-go minus the greedy rollout's reward. */
import { ADV_ESTIMATORS, need } from "../advantage.ts";
import { like, rowsOf } from "../masked.ts";

// remax: G_t = Σ_{k≥t} r_k·m_k (undiscounted reward-to-go); A_t = G_t - baseline_b·m_t.
ADV_ESTIMATORS.register("remax", {
  greedyBaseline: true,
  compute: (inp) => {
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
  },
});
