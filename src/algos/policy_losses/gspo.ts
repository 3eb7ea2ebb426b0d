/**
 * gspo (Zheng et al. 2025, arXiv:2507.18071), verl's token-level form:
 *   log s_b = Σ_t m·(logp - old) / max(Σ_t m, 1)                 (sequence log-ratio)
 *   log s_{b,t} = min(sg(log s_b) + logp_t - sg(logp_t), 10)      (value: log s_b)
 *   L = max(-A·s_{b,t}, -A·clamp(s_{b,t}, 1-ε_low, 1+ε_high));  pg_loss = seq-mean-token-mean(L)
 * Because of the stop-gradients, dL/dlogp_t = -A·s_b on the unclipped branch (0 when the clamp
 * at 10 or the clip range is active); it is not the derivative of the sequence mean. No
 * dual-clip; pg_clipfrac_lower is 0; ppo_kl uses the unclamped token log-ratio.
 *
 * @module
 */
import { clipRange, POLICY_LOSSES, tokenLevelLoss } from "../policy_loss.ts";
import { rowsOf } from "../masked.ts";

const metrics = ["actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"] as const;

POLICY_LOSSES.register("gspo", {
  doc: "sequence-level importance ratio (GSPO), clipped, seq-mean-token-mean",
  metrics,
  keys: ["clip_ratio_low", "clip_ratio_high"],
  compute: (inp, o) => {
    const { low, high } = clipRange(o);
    const { logProb, oldLogProb, advantages, responseMask: mask, R } = inp;
    const detached = o.detachedLogProb ?? logProb;
    const B = rowsOf(logProb.length, R), seqLogRatio = new Float64Array(B);
    for (let b = 0; b < B; b++) {
      let s = 0, n = 0;
      for (let t = b * R; t < (b + 1) * R; t++) {
        if (mask[t] !== 0) (s += detached[t] - oldLogProb[t], n++);
      }
      seqLogRatio[b] = s / Math.max(n, 1);
    }
    return tokenLevelLoss(inp, o, "seq-mean-token-mean", metrics, (i) => {
      const rawLog = seqLogRatio[Math.floor(i / R)] + logProb[i] - detached[i];
      const ratio = Math.exp(Math.min(rawLog, 10)), dRatio = rawLog <= 10 ? ratio : 0;
      const a = advantages[i], kl = -(logProb[i] - oldLogProb[i]);
      const l1 = -a * ratio, g1 = -a * dRatio;
      const l2 = -a * Math.min(Math.max(ratio, 1 - low), 1 + high);
      if (l2 > l1) {
        return { loss: l2, grad: ratio >= 1 - low && ratio <= 1 + high ? g1 : 0, clipped: 1, kl };
      }
      return { loss: l1, grad: g1, kl };
    });
  },
});
