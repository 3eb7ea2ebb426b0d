/**
 * clip_cov (Cui et al. 2025, arXiv:2505.22617): PPO-clip without the ±20 clamp, where a few
 * random high-covariance tokens lose their loss and gradient (cov_select.ts chooses them).
 *   r = exp(logp - old);  L1 = -A·r;  L2 = -A·clamp(r, 1-ε_low, 1+ε_high)
 *   corr_t = 0 for the chosen tokens, else 1;  L = max(L1, L2)·corr;  pg_loss = agg(L)
 *   pg_clipfrac = mean(corr = 0);  ppo_kl = mean(-(logp - old))
 * Backward: -A·r on the L1 branch (and on L2 inside the clip range), 0 on L2 outside it and on
 * the chosen tokens. verl returns no pg_clipfrac_lower for it.
 *
 * @module
 */
import { clipRange, POLICY_LOSSES, tokenLevelLoss } from "../policy_loss.ts";
import { clipCovSelection } from "./cov_select.ts";

const metrics = ["actor/pg_clipfrac", "actor/ppo_kl"] as const;

POLICY_LOSSES.register("clip_cov", {
  doc: "PPO-clip that cuts random high-covariance tokens (Clip-Cov; clip_cov_ratio/lb/ub)",
  metrics,
  keys: [
    "clip_ratio_low",
    "clip_ratio_high",
    "policy_loss.clip_cov_ratio",
    "policy_loss.clip_cov_lb",
    "policy_loss.clip_cov_ub",
  ],
  compute: (inp, o) => {
    const { low, high } = clipRange(o);
    const { logProb, oldLogProb, advantages, responseMask: mask } = inp;
    const detached = o.detachedLogProb ?? logProb;
    const clipped = new Uint8Array(mask.length);
    for (let i = 0; i < mask.length; i++) {
      if (mask[i] === 0) continue;
      const r = Math.exp(detached[i] - oldLogProb[i]), a = advantages[i];
      clipped[i] = -a * Math.min(Math.max(r, 1 - low), 1 + high) > -a * r ? 1 : 0;
    }
    const chosen = clipCovSelection({ ...inp, logProb: detached }, {
      ratio: o.clipCovRatio ?? 0.0002,
      lb: o.clipCovLb ?? 1.0,
      ub: o.clipCovUb ?? 5.0,
      clipped,
      seed: o.seed ?? 0,
    });
    return tokenLevelLoss(inp, o, o.lossAggMode ?? "token-mean", metrics, (i) => {
      const raw = logProb[i] - oldLogProb[i], r = Math.exp(raw), a = advantages[i];
      if (chosen[i]) return { loss: 0, grad: 0, clipped: 1, kl: -raw };
      const l1 = -a * r, l2 = -a * Math.min(Math.max(r, 1 - low), 1 + high);
      if (l2 > l1) return { loss: l2, grad: r >= 1 - low && r <= 1 + high ? -a * r : 0, kl: -raw };
      return { loss: l1, grad: -a * r, kl: -raw };
    });
  },
});
