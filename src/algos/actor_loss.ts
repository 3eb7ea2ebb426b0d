/**
 * The full actor objective of one micro-batch, as verl's dp_actor assembles it:
 *
 *   loss = pg_loss - entropy_coeff · agg(entropy) + kl_loss_coef · agg(kl(logp, ref, kl_loss_type))
 *
 * with agg = `loss_agg_mode` for the entropy and KL terms (the policy loss may
 * override its own mode, as gspo does). Returns the scalar, the metrics under
 * verl's names, and the two backward inputs the GPU needs: d loss / d logProb
 * and d loss / d entropy (the entropy kernel chains the latter into the logits).
 *
 * @module
 */

import { aggLoss, aggLossWeights } from "./agg.ts";
import { klPenalty, klPenaltyGrad } from "./kl.ts";
import { checkSameLength, like, type Vec } from "./masked.ts";
import { computePolicyLoss, type PolicyLossInputs, type PolicyLossOptions } from "./policy_loss.ts";
import "./policy_losses/all.ts";

/** Policy-loss inputs plus the optional entropy / reference log-probs, each `[B, R]`. */
export interface ActorLossInputs extends PolicyLossInputs {
  /** per-token entropy of the current policy (needed when entropyCoeff != 0) */
  entropy?: Vec;
  /** reference log-probs (needed when useKlLoss) */
  refLogProb?: Vec;
}

/** `actor.*` keys in camelCase; verl's defaults in brackets. */
export interface ActorLossOptions extends PolicyLossOptions {
  /** actor.policy_loss.loss_mode [vanilla] */
  policyLoss?: string;
  /** actor.entropy_coeff [0] */
  entropyCoeff?: number;
  /** actor.use_kl_loss [false] */
  useKlLoss?: boolean;
  /** actor.kl_loss_coef [0.001] */
  klLossCoef?: number;
  /** actor.kl_loss_type [low_var_kl] */
  klLossType?: string;
}

/** Result of `computeActorLoss`. */
export interface ActorLossResult {
  loss: number;
  /** d loss / d logProb, `[B, R]` */
  gradLogProb: Vec;
  /** d loss / d entropy, `[B, R]`; null when no entropy was given */
  gradEntropy: Vec | null;
  /** actor/pg_loss, the policy loss's own metrics (actor/pg_clipfrac, actor/ppo_kl,
   * actor/pg_clipfrac_lower where it reports them), and when present actor/entropy,
   * actor/kl_loss, actor/kl_coef */
  metrics: Record<string, number>;
}

/** Policy loss + entropy bonus + KL loss with their gradients. */
export function computeActorLoss(
  inputs: ActorLossInputs,
  options: ActorLossOptions = {},
): ActorLossResult {
  const pg = computePolicyLoss(options.policyLoss ?? "vanilla", inputs, options);
  const mode = options.lossAggMode ?? "token-mean";
  const agg = { ...options, R: inputs.R };
  const mask = inputs.responseMask;
  const metrics: Record<string, number> = { "actor/pg_loss": pg.pgLoss, ...pg.metrics };
  let loss = pg.pgLoss;
  const gradLogProb = pg.gradLogProb;
  const coeff = options.entropyCoeff ?? 0;
  let gradEntropy: Vec | null = null;
  if (coeff !== 0 && inputs.entropy === undefined) {
    throw new Error("entropyCoeff != 0 needs the per-token entropy");
  }
  if (inputs.entropy !== undefined || coeff !== 0) {
    const entropy = inputs.entropy!;
    checkSameLength({ entropy, responseMask: mask });
    const entropyAgg = aggLoss(entropy, mask, mode, agg);
    metrics["actor/entropy"] = entropyAgg;
    loss -= coeff * entropyAgg;
    const w = aggLossWeights(mask, mode, agg);
    gradEntropy = like(entropy);
    for (let i = 0; i < w.length; i++) gradEntropy[i] = -coeff * w[i];
  }
  if (options.useKlLoss) {
    const ref = inputs.refLogProb;
    if (ref === undefined) throw new Error("useKlLoss needs refLogProb");
    checkSameLength({ refLogProb: ref, responseMask: mask });
    const type = options.klLossType ?? "low_var_kl", klCoef = options.klLossCoef ?? 0.001;
    const kld = klPenalty(inputs.logProb, ref, type);
    const klLoss = aggLoss(kld, mask, mode, agg);
    metrics["actor/kl_loss"] = klLoss;
    metrics["actor/kl_coef"] = klCoef;
    loss += klCoef * klLoss;
    const dk = klPenaltyGrad(inputs.logProb, ref, type), w = aggLossWeights(mask, mode, agg);
    for (let i = 0; i < w.length; i++) if (w[i] !== 0) gradLogProb[i] += klCoef * w[i] * dk[i];
  }
  return { loss, gradLogProb, gradEntropy, metrics };
}
