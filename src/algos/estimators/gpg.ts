/** GPG: group-centred scores rescaled by the share of non-zero scores. */
import { ADV_ESTIMATORS, groupedScores, outcome } from "../advantage.ts";

// gpg: α = B / max(#{b : s_b ≠ 0}, 1);  a_b = α·(s_b - mean_g) / f_norm, f_norm = 1.
ADV_ESTIMATORS.register("gpg", {
  groups: true,
  doc: "a = α·(s - mean_g), α = B / #{s ≠ 0} over the batch",
  compute: (inp) => {
    const { scores, stats } = groupedScores(inp, "gpg");
    const nonZero = scores.reduce((n, s) => n + (s !== 0 ? 1 : 0), 0);
    const alpha = scores.length / Math.max(nonZero, 1);
    return outcome(inp, scores.map((s, b) => alpha * (s - stats.mean[b])));
  },
});
