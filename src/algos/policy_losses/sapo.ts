/**
 * sapo (Soft Adaptive Policy Optimization, arXiv:2511.20347): a smooth gate replaces the clip.
 *   r = exp(clamp(logp - old, -20, 20));  τ = A > 0 ? τ_pos : τ_neg
 *   f(r) = σ(τ·(r - 1))·4/τ;  L = -f(r)·A;  pg_loss = seq-mean-token-mean(L) (as verl)
 *   dL/dlogp = -A·4·σ·(1 - σ)·r  (0 where the ±20 clamp is active)
 * verl reports pg_clipfrac and pg_clipfrac_lower as 0 and ppo_kl = mean(-(clamped logp - old)).
 *
 * @module
 */
import { clampedRatio, POLICY_LOSSES, tokenLevelLoss } from "../policy_loss.ts";

const metrics = ["actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"] as const;

POLICY_LOSSES.register("sapo", {
  doc: "smooth sigmoid gate on the ratio (SAPO; tau_pos, tau_neg), seq-mean-token-mean",
  metrics,
  keys: ["tau_pos", "tau_neg"],
  compute: (inp, o) => {
    const tauPos = o.tauPos ?? 1.0, tauNeg = o.tauNeg ?? 1.05;
    if (!(tauPos > 0) || !(tauNeg > 0)) {
      throw new Error(`sapo: tau_pos and tau_neg must be > 0, got ${tauPos}, ${tauNeg}`);
    }
    const { logProb, oldLogProb, advantages } = inp;
    return tokenLevelLoss(inp, o, "seq-mean-token-mean", metrics, (i) => {
      const { ratio, dRatio, logRatio } = clampedRatio(logProb[i] - oldLogProb[i]);
      const a = advantages[i], tau = a > 0 ? tauPos : tauNeg;
      const s = 1 / (1 + Math.exp(-tau * (ratio - 1)));
      return { loss: -s * (4 / tau) * a, grad: -a * 4 * s * (1 - s) * dRatio, kl: -logRatio };
    });
  },
});
