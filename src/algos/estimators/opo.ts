/** OPO: length-weighted group baseline. */
import { ADV_ESTIMATORS, groupedScores, outcome } from "../advantage.ts";
import { sequenceLengths } from "../group.ts";

// opo: length-weighted baseline, bsl_g = Σ len_i·s_i / Σ len_i (0 for a group of one).
ADV_ESTIMATORS.register("opo", {
  groups: true,
  doc: "a = s - Σ_g len·s / Σ_g len (length-weighted group baseline); a group of one: a = s",
  compute: (inp) => {
    const { uids, scores, stats } = groupedScores(inp, "opo");
    const lens = sequenceLengths(inp.responseMask, inp.R);
    const num = new Map<string, number>(), den = new Map<string, number>();
    uids.forEach((u, b) => {
      num.set(u, (num.get(u) ?? 0) + lens[b] * scores[b]);
      den.set(u, (den.get(u) ?? 0) + lens[b]);
    });
    // An all-padding group has Σ len = 0; verl would divide 0/0, we use baseline 0.
    const a = scores.map((s, b) => {
      const d = den.get(uids[b])!;
      return stats.size[b] === 1 || d === 0 ? s : s - num.get(uids[b])! / d;
    });
    return outcome(inp, a);
  },
});
