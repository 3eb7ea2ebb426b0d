/** Pass@k GRPO: only the best response of each group gets an advantage. */
import { ADV_ESTIMATORS, need, outcome } from "../advantage.ts";
import { groupIndex, sequenceScores } from "../group.ts";
import { stdUnbiased } from "../masked.ts";

// grpo_passk: per group (at least 2 samples, else an error), the best response b* gets
//   a = r_max - r_second   [/ (std_g + ε), unbiased std, when norm_adv_by_std_in_grpo]
// and every other response 0. With a tied maximum r_max = r_second, so the whole group gets 0.
ADV_ESTIMATORS.register("grpo_passk", {
  groups: true,
  keys: ["algorithm.norm_adv_by_std_in_grpo"],
  doc: "the group's best response gets r_max - r_2nd (/ (std_g + ε) when " +
    "norm_adv_by_std_in_grpo), the others 0; a group of one is an error",
  compute: (inp, o) => {
    const uids = need(inp.uids, "uids [B]", "grpo_passk");
    const scores = sequenceScores(inp.tokenLevelRewards, inp.R);
    const { groupOf, count } = groupIndex(uids);
    const members: number[][] = Array.from({ length: count }, () => []);
    groupOf.forEach((g, i) => members[g].push(i));
    const a = new Float64Array(scores.length);
    for (const rows of members) {
      if (rows.length < 2) {
        throw new Error(
          `grpo_passk needs at least 2 samples per group; group "${uids[rows[0]]}" has ` +
            `${rows.length} (actor_rollout_ref.rollout.n >= 2)`,
        );
      }
      let best = rows[0];
      for (const i of rows) if (scores[i] > scores[best]) best = i;
      let second = -Infinity;
      for (const i of rows) if (i !== best) second = Math.max(second, scores[i]);
      let adv = scores[best] - second;
      if (o.normAdvByStdInGrpo) adv /= stdUnbiased(rows.map((i) => scores[i])) + o.epsilon;
      a[best] = adv;
    }
    return outcome(inp, a);
  },
});
