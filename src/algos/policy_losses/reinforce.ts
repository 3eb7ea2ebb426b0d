/**
 * reinforce (verl's compute_policy_loss_reinforce, bypass mode's `loss_type: reinforce`): plain
 * policy gradient against the rollout policy, weighted by detached, truncated importance weights.
 * Here the old log-probs are the rollout's (bypass mode), x = logp - logp_rollout:
 *   w = sg(min(exp(clamp(x, -20, 20)), C)) per token (rolloutIs "token"), or
 *       sg(min(exp(clamp(Σ_row x, -20, 20)), C)) per sequence ("sequence"), or 1 (null)
 *   L = -A·w·logp;  pg_loss = agg(L) by loss_agg_mode;  dL/dlogp = -A·w
 *   ppo_kl = mean(-x), the only metric verl's function returns
 * with C = rollout_is_threshold (src/algos/rollout_is.ts computes w).
 *
 * @module
 */
import { POLICY_LOSSES, tokenLevelLoss } from "../policy_loss.ts";
import { rolloutIsWeights } from "../rollout_is.ts";

const metrics = ["actor/ppo_kl"] as const;

POLICY_LOSSES.register("reinforce", {
  doc: "bypass mode's -A·w·logp, w the truncated rollout IS weight " +
    "(algorithm.rollout_correction.loss_type=reinforce; not a loss_mode of its own)",
  metrics,
  keys: [],
  compute: (inp, o) => {
    const { logProb, oldLogProb, advantages, responseMask, R } = inp;
    const detached = o.detachedLogProb ?? logProb;
    const w = o.rolloutIs
      ? rolloutIsWeights(detached, oldLogProb, responseMask, {
        R,
        level: o.rolloutIs,
        threshold: o.rolloutIsThreshold ?? 2,
      }).weights
      : null;
    return tokenLevelLoss(inp, o, o.lossAggMode ?? "token-mean", metrics, (i) => {
      const wi = w ? w[i] : 1, a = advantages[i];
      return { loss: -a * wi * logProb[i], grad: -a * wi, kl: oldLogProb[i] - logProb[i] };
    });
  },
});
