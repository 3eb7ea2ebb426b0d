/**
 * Policy losses (`actor.policy_loss.loss_mode`), registered by name in
 * `POLICY_LOSSES`. Each returns verl's scalars (pg_loss, pg_clipfrac, ppo_kl,
 * pg_clipfrac_lower) and the backward d pg_loss / d logProb `[B, R]` that the
 * GPU update chains into the logprob kernel.
 *
 * @module
 */

import { aggLoss, aggLossWeights, type AggOptions, type LossAggMode } from "./agg.ts";
import { checkSameLength, like, type Mask, maskedMean, rowsOf, type Vec } from "./masked.ts";
import { Registry } from "../tensor/mod.ts";

/** Per-token inputs, each `[B, R]`. */
export interface PolicyLossInputs {
  R: number;
  oldLogProb: Vec;
  logProb: Vec;
  advantages: Vec;
  responseMask: Mask;
}

/** `actor.*` clip settings plus aggregation; verl's defaults in brackets. */
export interface PolicyLossOptions extends Omit<AggOptions, "R"> {
  /** [token-mean]; gspo always uses seq-mean-token-mean, as verl does */
  lossAggMode?: LossAggMode;
  /** ε [0.2] */
  clipRatio?: number;
  /** lower ε [clipRatio] */
  clipRatioLow?: number;
  /** upper ε [clipRatio] */
  clipRatioHigh?: number;
  /** dual-clip bound c for negative advantages, must be > 1 [3.0] */
  clipRatioC?: number;
  /**
   * gspo only, for checking the surrogate: the value standing in for the
   * stop-gradient sg(logProb); defaults to logProb itself.
   */
  detachedLogProb?: Vec;
}

/** Scalars under verl's names plus the backward. */
export interface PolicyLossResult {
  pgLoss: number;
  pgClipfrac: number;
  ppoKl: number;
  pgClipfracLower: number;
  /** per-token loss before aggregation, `[B, R]` */
  pgLosses: Vec;
  /** d pgLoss / d logProb, `[B, R]`, 0 on invalid tokens */
  gradLogProb: Vec;
}

/** A registered policy loss. */
export type PolicyLossFn = (
  inputs: PolicyLossInputs,
  options: PolicyLossOptions,
) => PolicyLossResult;

/** Policy losses by verl name. */
export const POLICY_LOSSES: Registry<PolicyLossFn> = new Registry("policy loss");

/** Runs the policy loss `name` (throws listing valid names when unknown). */
export function computePolicyLoss(
  name: string,
  inputs: PolicyLossInputs,
  options: PolicyLossOptions = {},
): PolicyLossResult {
  const fn = POLICY_LOSSES.get(name);
  const { oldLogProb, logProb, advantages, responseMask } = inputs;
  checkSameLength({ logProb, oldLogProb, advantages, responseMask });
  rowsOf(logProb.length, inputs.R);
  return fn(inputs, options);
}

function clipRange(o: PolicyLossOptions) {
  const eps = o.clipRatio ?? 0.2;
  return { low: o.clipRatioLow ?? eps, high: o.clipRatioHigh ?? eps, c: o.clipRatioC ?? 3.0 };
}

/**
 * vanilla PPO-clip with dual-clip (Ye et al. 2019, arXiv:1912.09729):
 *   r = exp(clamp(logp - old, -20, 20))
 *   L1 = -A·r;  L2 = -A·clamp(r, 1-ε_low, 1+ε_high);  Lc = max(L1, L2)
 *   L = A < 0 ? min(-A·c, Lc) : Lc;   pg_loss = agg(L)
 *   pg_clipfrac = mean(L2 > L1);  pg_clipfrac_lower = mean(Lc > -A·c and A < 0)
 *   ppo_kl = mean(-(clamped logp - old))
 * Backward per token (the branch torch's max/min/clamp select):
 *   dL/dlogp = -A·r·[|logp-old| ≤ 20] on the L1 branch, the same on L2 when r is inside
 *   the clip range and 0 outside, and 0 when the dual-clip constant is selected.
 */
export function vanillaPolicyLoss(inp: PolicyLossInputs, o: PolicyLossOptions): PolicyLossResult {
  const { low, high, c } = clipRange(o);
  if (!(c > 1)) throw new Error(`clip_ratio_c for dual-clip PPO must be > 1, got ${c}`);
  const { logProb, oldLogProb, advantages, responseMask: mask, R } = inp;
  const mode = o.lossAggMode ?? "token-mean", agg = { ...o, R };
  const w = aggLossWeights(mask, mode, agg);
  const pgLosses = like(logProb), grad = like(logProb);
  const clipped = new Float32Array(mask.length), lower = new Float32Array(mask.length);
  const negKl = new Float64Array(mask.length);
  for (let i = 0; i < logProb.length; i++) {
    if (mask[i] === 0) continue; // padding may hold garbage; it never reaches the loss
    const raw = logProb[i] - oldLogProb[i];
    const nkl = Math.min(Math.max(raw, -20), 20);
    const ratio = Math.exp(nkl), dRatio = raw >= -20 && raw <= 20 ? ratio : 0;
    const a = advantages[i];
    const l1 = -a * ratio, g1 = -a * dRatio;
    const inside = ratio >= 1 - low && ratio <= 1 + high;
    const l2 = -a * Math.min(Math.max(ratio, 1 - low), 1 + high), g2 = inside ? g1 : 0;
    const isClipped = l2 > l1;
    let loss = isClipped ? l2 : l1, g = isClipped ? g2 : g1;
    const l3 = -a * c;
    if (a < 0 && loss > l3) (loss = l3, g = 0, lower[i] = 1);
    clipped[i] = isClipped ? 1 : 0;
    negKl[i] = -nkl;
    pgLosses[i] = loss;
    grad[i] = w[i] * g;
  }
  return {
    pgLoss: aggLoss(pgLosses, mask, mode, agg),
    pgClipfrac: maskedMean(clipped, mask),
    ppoKl: maskedMean(negKl, mask),
    pgClipfracLower: maskedMean(lower, mask),
    pgLosses,
    gradLogProb: grad,
  };
}

/**
 * GSPO (Zheng et al. 2025, arXiv:2507.18071), verl's token-level form:
 *   log s_b = Σ_t m·(logp - old) / max(Σ_t m, 1)                 (sequence log-ratio)
 *   log s_{b,t} = min(sg(log s_b) + logp_t - sg(logp_t), 10)      (value: log s_b)
 *   L = max(-A·s_{b,t}, -A·clamp(s_{b,t}, 1-ε_low, 1+ε_high));  pg_loss = seq-mean-token-mean(L)
 * Because of the stop-gradients, dL/dlogp_t = -A·s_b on the unclipped branch (0 when the
 * clamp at 10 or the clip range is active); it is not the derivative of the sequence mean.
 * No dual-clip; pg_clipfrac_lower is 0; ppo_kl uses the unclamped log-ratio.
 */
export function gspoPolicyLoss(inp: PolicyLossInputs, o: PolicyLossOptions): PolicyLossResult {
  const { low, high } = clipRange(o);
  const { logProb, oldLogProb, advantages, responseMask: mask, R } = inp;
  const detached = o.detachedLogProb ?? logProb;
  const B = rowsOf(logProb.length, R), mode = "seq-mean-token-mean", agg = { ...o, R };
  const w = aggLossWeights(mask, mode, agg);
  const pgLosses = like(logProb), grad = like(logProb);
  const clipped = new Float32Array(mask.length), negKl = new Float64Array(mask.length);
  for (let b = 0; b < B; b++) {
    let s = 0, n = 0;
    for (let t = b * R; t < (b + 1) * R; t++) {
      if (mask[t] !== 0) (s += detached[t] - oldLogProb[t], n++);
    }
    const seqLogRatio = s / Math.max(n, 1);
    for (let i = b * R; i < (b + 1) * R; i++) {
      if (mask[i] === 0) continue;
      const rawLog = seqLogRatio + logProb[i] - detached[i];
      const ratio = Math.exp(Math.min(rawLog, 10)), dRatio = rawLog <= 10 ? ratio : 0;
      const a = advantages[i];
      const l1 = -a * ratio, g1 = -a * dRatio;
      const l2 = -a * Math.min(Math.max(ratio, 1 - low), 1 + high);
      const g2 = ratio >= 1 - low && ratio <= 1 + high ? g1 : 0;
      const isClipped = l2 > l1;
      clipped[i] = isClipped ? 1 : 0;
      negKl[i] = -(logProb[i] - oldLogProb[i]);
      pgLosses[i] = isClipped ? l2 : l1;
      grad[i] = w[i] * (isClipped ? g2 : g1);
    }
  }
  return {
    pgLoss: aggLoss(pgLosses, mask, mode, agg),
    pgClipfrac: maskedMean(clipped, mask),
    ppoKl: maskedMean(negKl, mask),
    pgClipfracLower: 0,
    pgLosses,
    gradLogProb: grad,
  };
}

POLICY_LOSSES.register("vanilla", vanillaPolicyLoss);
POLICY_LOSSES.register("gspo", gspoPolicyLoss);
