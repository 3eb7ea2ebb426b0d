/** GRPO in verl's bincount form: the std has a floor of sqrt(ε). */
import { ADV_ESTIMATORS, need, outcome } from "../advantage.ts";
import { groupIndex, sequenceScores } from "../group.ts";

// grpo_vectorized: per group g with n_g samples, S1 = Σ s, S2 = Σ s²:
//   mean_g = S1 / n_g;  var_g = (S2 - S1²/n_g) / max(n_g - 1, 1);  std_g = sqrt(max(var_g, ε))
//   a group of one: mean 0, std 1
//   a = (s - mean_g) / (std_g + ε), or s - mean_g when norm_adv_by_std_in_grpo=false.
// Unlike grpo the std never drops below sqrt(ε) (1e-3 for ε = 1e-6), so a group whose scores
// differ by less than about 1e-3 gets smaller advantages than under grpo; elsewhere they agree.
ADV_ESTIMATORS.register("grpo_vectorized", {
  groups: true,
  keys: ["algorithm.norm_adv_by_std_in_grpo"],
  doc: "grpo with var_g = (Σs² - (Σs)²/n)/max(n-1, 1) and std_g = sqrt(max(var_g, ε)) " +
    "(a floor of sqrt(ε) = 1e-3)",
  compute: (inp, o) => {
    const uids = need(inp.uids, "uids [B]", "grpo_vectorized");
    const scores = sequenceScores(inp.tokenLevelRewards, inp.R);
    if (uids.length !== scores.length) {
      throw new Error(`uids has length ${uids.length}, expected B = ${scores.length}`);
    }
    const { groupOf, count } = groupIndex(uids);
    const n = new Float64Array(count), s1 = new Float64Array(count), s2 = new Float64Array(count);
    scores.forEach((s, i) => {
      const g = groupOf[i];
      n[g]++, s1[g] += s, s2[g] += s * s;
    });
    const a = scores.map((s, i) => {
      const g = groupOf[i];
      const single = n[g] <= 1;
      const mean = single ? 0 : s1[g] / n[g];
      const v = (s2[g] - (s1[g] * s1[g]) / n[g]) / Math.max(n[g] - 1, 1);
      const std = single ? 1 : Math.sqrt(Math.max(v, o.epsilon));
      return o.normAdvByStdInGrpo ? (s - mean) / (std + o.epsilon) : s - mean;
    });
    return outcome(inp, a);
  },
});
