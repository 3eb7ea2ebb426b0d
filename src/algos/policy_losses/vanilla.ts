/**
 * vanilla: PPO-clip with dual-clip (Ye et al. 2019, arXiv:1912.09729), verl's default loss.
 *   r = exp(clamp(logp - old, -20, 20))
 *   L1 = -A·r;  L2 = -A·clamp(r, 1-ε_low, 1+ε_high);  Lc = max(L1, L2)
 *   L = A < 0 ? min(-A·c, Lc) : Lc;   pg_loss = agg(L) by loss_agg_mode
 *   pg_clipfrac = mean(L2 > L1);  pg_clipfrac_lower = mean(Lc > -A·c and A < 0)
 *   ppo_kl = mean(-(clamped logp - old))
 * Backward per token (the branch torch's max/min/clamp select): -A·r·[|logp-old| ≤ 20] on the
 * L1 branch, the same on L2 when r is inside the clip range and 0 outside, and 0 when the
 * dual-clip constant is selected.
 *
 * @module
 */
import { clampedRatio, clipRange, POLICY_LOSSES, tokenLevelLoss } from "../policy_loss.ts";

const metrics = ["actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"] as const;

POLICY_LOSSES.register("vanilla", {
  doc: "token-level clipped PPO with dual-clip (clip_ratio_low/high, clip_ratio_c)",
  metrics,
  keys: ["clip_ratio_low", "clip_ratio_high", "clip_ratio_c"],
  compute: (inp, o) => {
    const { low, high, c } = clipRange(o);
    if (!(c > 1)) throw new Error(`clip_ratio_c for dual-clip PPO must be > 1, got ${c}`);
    const { logProb, oldLogProb, advantages } = inp;
    return tokenLevelLoss(inp, o, o.lossAggMode ?? "token-mean", metrics, (i) => {
      const { ratio, dRatio, logRatio } = clampedRatio(logProb[i] - oldLogProb[i]);
      const a = advantages[i];
      const l1 = -a * ratio, g1 = -a * dRatio;
      const inside = ratio >= 1 - low && ratio <= 1 + high;
      const l2 = -a * Math.min(Math.max(ratio, 1 - low), 1 + high);
      const clipped = l2 > l1;
      const l3 = -a * c;
      if (a < 0 && (clipped ? l2 : l1) > l3) {
        return { loss: l3, grad: 0, clipped: clipped ? 1 : 0, kl: -logRatio, lower: 1 };
      }
      return clipped
        ? { loss: l2, grad: inside ? g1 : 0, clipped: 1, kl: -logRatio }
        : { loss: l1, grad: g1, kl: -logRatio };
    });
  },
});
