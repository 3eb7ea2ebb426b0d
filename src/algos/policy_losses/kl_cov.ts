/**
 * kl_cov (Cui et al. 2025, arXiv:2505.22617): the policy gradient -A·r, plus a |log ratio|
 * penalty on the few tokens of largest covariance (cov_select.ts chooses them).
 *   r = exp(logp - old);  L = -A·r + [chosen]·ppo_kl_coef·|logp - old|;  pg_loss = agg(L)
 *   dL/dlogp = -A·r + [chosen]·ppo_kl_coef·sign(logp - old)
 * verl reports only ppo_kl, here mean(|logp - old|).
 *
 * @module
 */
import { POLICY_LOSSES, tokenLevelLoss } from "../policy_loss.ts";
import { klCovSelection } from "./cov_select.ts";

const metrics = ["actor/ppo_kl"] as const;

POLICY_LOSSES.register("kl_cov", {
  doc:
    "-A·r plus a |log ratio| penalty on high-covariance tokens (KL-Cov; kl_cov_ratio, ppo_kl_coef)",
  metrics,
  keys: ["policy_loss.kl_cov_ratio", "policy_loss.ppo_kl_coef"],
  compute: (inp, o) => {
    const { logProb, oldLogProb, advantages } = inp;
    const coef = o.ppoKlCoef ?? 0.1;
    const chosen = klCovSelection(
      { ...inp, logProb: o.detachedLogProb ?? logProb },
      o.klCovRatio ?? 0.0002,
    );
    return tokenLevelLoss(inp, o, o.lossAggMode ?? "token-mean", metrics, (i) => {
      const raw = logProb[i] - oldLogProb[i], r = Math.exp(raw), a = advantages[i];
      const k = chosen[i] ? coef : 0;
      return {
        loss: -a * r + k * Math.abs(raw),
        grad: -a * r + k * Math.sign(raw),
        kl: Math.abs(raw),
      };
    });
  },
});
