/** REINFORCE++ with a group-mean baseline, whitened over the batch. */
import { ADV_ESTIMATORS, groupedScores, maskMul, outcome } from "../advantage.ts";
import { maskedWhiten } from "../masked.ts";

// reinforce_plus_plus_baseline: (s_b - mean_g) on every valid token, whitened over the batch.
ADV_ESTIMATORS.register("reinforce_plus_plus_baseline", {
  groups: true,
  doc: "A = whiten((s - mean_g)·m) over valid tokens; a group of one: mean 0",
  compute: (inp) => {
    const { scores, stats } = groupedScores(inp, "reinforce_plus_plus_baseline");
    const centred = outcome(inp, scores.map((s, b) => s - stats.mean[b])).advantages;
    const adv = maskMul(maskedWhiten(centred, inp.responseMask), inp.responseMask);
    return { advantages: adv, returns: adv };
  },
});
