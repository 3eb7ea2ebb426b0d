/**
 * Clipped value loss of the critic (verl's `compute_value_loss`):
 *
 *   v_clip = clamp(vpred, old - c, old + c)          (c = critic.cliprange_value)
 *   vf_loss = 0.5 · agg( max((vpred - R)², (v_clip - R)²) )
 *   vf_clipfrac = mean( (v_clip - R)² > (vpred - R)² )
 *
 * Backward: where the clipped term is strictly larger, vpred sits outside the
 * clip range and the term is constant in vpred, so the gradient is 0;
 * otherwise d/dvpred = 0.5 · w · 2 (vpred - R) = w · (vpred - R).
 *
 * @module
 */

import { aggLoss, aggLossWeights, type AggOptions, type LossAggMode } from "./agg.ts";
import { checkSameLength, like, type Mask, maskedMean, type Vec } from "./masked.ts";

/** Each `[B, R]`. */
export interface ValueLossInputs {
  R: number;
  /** current critic predictions */
  vpreds: Vec;
  /** critic values at rollout time (old values) */
  values: Vec;
  returns: Vec;
  responseMask: Mask;
}

/** `critic.*` keys in camelCase. */
export interface ValueLossOptions extends Omit<AggOptions, "R"> {
  /** critic.cliprange_value [0.5] */
  cliprangeValue?: number;
  /** critic.loss_agg_mode [token-mean] */
  lossAggMode?: LossAggMode;
}

/** Result of `computeValueLoss`. */
export interface ValueLossResult {
  vfLoss: number;
  vfClipfrac: number;
  /** d vfLoss / d vpreds, `[B, R]` */
  gradVpreds: Vec;
  /** critic/vf_loss, critic/vf_clipfrac, critic/vpred_mean */
  metrics: Record<string, number>;
}

/** Clipped value loss with its gradient. */
export function computeValueLoss(
  inputs: ValueLossInputs,
  options: ValueLossOptions = {},
): ValueLossResult {
  const { vpreds, values, returns, responseMask: mask, R } = inputs;
  checkSameLength({ vpreds, values, returns, responseMask: mask });
  const c = options.cliprangeValue ?? 0.5, mode = options.lossAggMode ?? "token-mean";
  const agg = { ...options, R };
  const w = aggLossWeights(mask, mode, agg);
  const lossMat = like(vpreds), grad = like(vpreds), clipped = new Float32Array(mask.length);
  for (let i = 0; i < vpreds.length; i++) {
    if (mask[i] === 0) continue;
    const v = vpreds[i], ret = returns[i];
    const vClip = Math.max(Math.min(v, values[i] + c), values[i] - c);
    const l1 = (v - ret) ** 2, l2 = (vClip - ret) ** 2;
    const isClipped = l2 > l1;
    clipped[i] = isClipped ? 1 : 0;
    lossMat[i] = isClipped ? l2 : l1;
    grad[i] = isClipped ? 0 : w[i] * (v - ret);
  }
  const vfLoss = 0.5 * aggLoss(lossMat, mask, mode, agg);
  const vfClipfrac = maskedMean(clipped, mask);
  return {
    vfLoss,
    vfClipfrac,
    gradVpreds: grad,
    metrics: {
      "critic/vf_loss": vfLoss,
      "critic/vf_clipfrac": vfClipfrac,
      "critic/vpred_mean": maskedMean(vpreds, mask),
    },
  };
}
