/**
 * gpg (Group Policy Gradient, arXiv:2504.02546): plain policy gradient, no ratio and no clip.
 *   L = -logp·A;  pg_loss = agg(L) by loss_agg_mode;  dL/dlogp = -A
 * verl's function returns no metrics for it (dp_actor still reports pg_loss).
 *
 * @module
 */
import { POLICY_LOSSES, tokenLevelLoss } from "../policy_loss.ts";

POLICY_LOSSES.register("gpg", {
  doc: "plain policy gradient -A·logp (GPG)",
  metrics: [],
  keys: [],
  compute: (inp, o) => {
    const { logProb, advantages } = inp;
    return tokenLevelLoss(inp, o, o.lossAggMode ?? "token-mean", [], (i) => ({
      loss: -logProb[i] * advantages[i],
      grad: -advantages[i],
      kl: 0,
    }));
  },
});
