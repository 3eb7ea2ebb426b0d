/**
 * geo_mean (GMPO, arXiv:2507.20673): the geometric mean of token ratios per sequence, clipped per
 * token in log space.
 *   x_t = logp_t - old_t;  x̂_t = sgn(A_t)·min(sgn(A_t)·x_t, sgn(A_t)·clamp(x_t, -ε_low, ε_high))
 *   n_b = Σ_t m;  ratio_b = exp(Σ_t m·x̂_t / n_b);  Â_b = Σ_t m·A_t / n_b;  L_b = -Â_b·ratio_b
 *   pg_loss = Σ_b L_b / G·dp,  G = globalBatchSize ?? B (every row, empty ones included, as
 *   verl's torch.mean over the micro-batch; loss_agg_mode is not used)
 *   dL_b/dlogp_t = L_b / n_b · [A_t > 0 and x_t ≤ ε_high, or A_t < 0 and x_t ≥ -ε_low]
 *   pg_clipfrac = mean(x_t outside [-ε_low, ε_high] and A_t > 0); pg_clipfrac_lower likewise for
 *   A_t < 0; ppo_kl = mean(-x_t)
 * verl divides by n_b + 1e-8; we divide by max(n_b, 1) (the same below f32 resolution, and 0
 * sums on empty rows either way).
 *
 * @module
 */
import { clipRange, POLICY_LOSSES } from "../policy_loss.ts";
import { like, rowsOf } from "../masked.ts";

POLICY_LOSSES.register("geo_mean", {
  doc: "geometric mean of clipped token ratios per sequence (GMPO; clip_ratio_low/high)",
  metrics: ["actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"],
  keys: ["clip_ratio_low", "clip_ratio_high"],
  compute: (inp, o) => {
    const { low, high } = clipRange(o);
    const { logProb, oldLogProb, advantages, responseMask: mask, R } = inp;
    const B = rowsOf(logProb.length, R), dp = o.dpSize ?? 1;
    if (o.globalBatchSize === undefined && dp > 1) {
      throw new Error("geo_mean with dpSize > 1 needs the global globalBatchSize");
    }
    const rows = o.globalBatchSize ?? B, scale = rows === 0 ? 0 : dp / rows;
    const grad = like(logProb);
    let total = 0, n = 0, upper = 0, lower = 0, kl = 0;
    for (let b = 0; b < B; b++) {
      let sx = 0, sa = 0, count = 0;
      for (let i = b * R; i < (b + 1) * R; i++) {
        if (mask[i] === 0) continue;
        const x = logProb[i] - oldLogProb[i], a = advantages[i], s = Math.sign(a);
        const xc = Math.min(Math.max(x, -low), high);
        (sx += s * Math.min(s * x, s * xc), sa += a, count++);
        const clipped = x !== xc;
        (n++, kl -= x, upper += clipped && a > 0 ? 1 : 0, lower += clipped && a < 0 ? 1 : 0);
      }
      const d = Math.max(count, 1), lossB = -(sa / d) * Math.exp(sx / d);
      total += lossB;
      for (let i = b * R; i < (b + 1) * R; i++) {
        if (mask[i] === 0) continue;
        const x = logProb[i] - oldLogProb[i], a = advantages[i];
        const passes = a > 0 ? x <= high : a < 0 ? x >= -low : false;
        grad[i] = passes ? (scale * lossB) / d : 0;
      }
    }
    const mean = (s: number) => (n === 0 ? 0 : s / n);
    return {
      pgLoss: total * scale,
      metrics: {
        "actor/pg_clipfrac": mean(upper),
        "actor/ppo_kl": mean(kl),
        "actor/pg_clipfrac_lower": mean(lower),
      },
      gradLogProb: grad,
    };
  },
});
