/** GRPO: group-normalised outcome scores (Dr.GRPO without the std). */
import { ADV_ESTIMATORS, groupedScores, outcome } from "../advantage.ts";

// grpo: a_b = (s_b - mean_g) / (std_g + ε), or s_b - mean_g without std (Dr.GRPO).
ADV_ESTIMATORS.register("grpo", {
  groups: true,
  keys: ["algorithm.norm_adv_by_std_in_grpo"],
  doc:
    "a = (s - mean_g) / (std_g + ε) (unbiased std); without the std when norm_adv_by_std_in_grpo=false (Dr.GRPO); a group of one: mean 0, std 1",
  compute: (inp, o) => {
    const { scores, stats } = groupedScores(inp, "grpo");
    const a = scores.map((s, b) =>
      o.normAdvByStdInGrpo ? (s - stats.mean[b]) / (stats.std[b] + o.epsilon) : s - stats.mean[b]
    );
    return outcome(inp, a);
  },
});
