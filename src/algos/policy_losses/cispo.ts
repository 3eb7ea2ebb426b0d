/**
 * cispo (MiniMax-M1, arXiv:2506.13585): the clipped ratio only weights the policy gradient.
 *   r = exp(clamp(logp - old, -20, 20));  w = sg(clamp(r, 1-ε_low, 1+ε_high))
 *   L = -w·A·logp;  pg_loss = agg(L) by loss_agg_mode;  dL/dlogp = -w·A
 *   pg_clipfrac = mean(r ≠ w);  pg_clipfrac_lower = 0;  ppo_kl = mean(-(clamped logp - old))
 *
 * @module
 */
import { clampedRatio, clipRange, POLICY_LOSSES, tokenLevelLoss } from "../policy_loss.ts";

const metrics = ["actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"] as const;

POLICY_LOSSES.register("cispo", {
  doc: "clipped importance-sampling weight times -A·logp (CISPO; clip_ratio_low/high)",
  metrics,
  keys: ["clip_ratio_low", "clip_ratio_high"],
  compute: (inp, o) => {
    const { low, high } = clipRange(o);
    const { logProb, oldLogProb, advantages } = inp;
    const detached = o.detachedLogProb ?? logProb;
    return tokenLevelLoss(inp, o, o.lossAggMode ?? "token-mean", metrics, (i) => {
      const { ratio } = clampedRatio(detached[i] - oldLogProb[i]);
      const w = Math.min(Math.max(ratio, 1 - low), 1 + high), a = advantages[i];
      const kl = -clampedRatio(logProb[i] - oldLogProb[i]).logRatio;
      return { loss: -w * a * logProb[i], grad: -w * a, clipped: ratio !== w ? 1 : 0, kl };
    });
  },
});
