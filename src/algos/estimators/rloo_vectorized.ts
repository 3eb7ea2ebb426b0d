/** RLOO in verl's bincount form: a group of one gets 0, not its score. */
import { ADV_ESTIMATORS, need, outcome } from "../advantage.ts";
import { groupIndex, sequenceScores } from "../group.ts";

// rloo_vectorized: a = (n_g·s - Σ_g s) / max(n_g - 1, 1) · [n_g > 1]. For n_g > 1 this is rloo's
// leave-one-out difference; a group of one gets 0 (rloo keeps the raw score there).
ADV_ESTIMATORS.register("rloo_vectorized", {
  groups: true,
  doc: "a = (n·s - Σ_g s)/(n - 1), as rloo; a group of one: a = 0",
  compute: (inp) => {
    const uids = need(inp.uids, "uids [B]", "rloo_vectorized");
    const scores = sequenceScores(inp.tokenLevelRewards, inp.R);
    if (uids.length !== scores.length) {
      throw new Error(`uids has length ${uids.length}, expected B = ${scores.length}`);
    }
    const { groupOf, count } = groupIndex(uids);
    const n = new Float64Array(count), sum = new Float64Array(count);
    scores.forEach((s, i) => (n[groupOf[i]]++, sum[groupOf[i]] += s));
    const a = scores.map((s, i) => {
      const c = n[groupOf[i]];
      return c > 1 ? (c * s - sum[groupOf[i]]) / (c - 1) : 0;
    });
    return outcome(inp, a);
  },
});
