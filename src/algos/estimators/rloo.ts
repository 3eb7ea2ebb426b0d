/** RLOO: leave-one-out group baseline. */
import { ADV_ESTIMATORS, groupedScores, outcome } from "../advantage.ts";

// rloo: leave-one-out baseline, a_b = n/(n-1)·(s_b - mean_g) = s_b - mean of the others;
// a group of one keeps its raw score.
ADV_ESTIMATORS.register("rloo", {
  groups: true,
  doc: "a = n/(n-1)·(s - mean_g) (leave-one-out mean); a group of one: a = s",
  compute: (inp) => {
    const { scores, stats } = groupedScores(inp, "rloo");
    const a = scores.map((s, b) => {
      const n = stats.size[b];
      return n > 1 ? (s * n) / (n - 1) - (stats.mean[b] * n) / (n - 1) : s;
    });
    return outcome(inp, a);
  },
});
