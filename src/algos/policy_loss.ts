/**
 * Policy losses (`actor.policy_loss.loss_mode`): the registry `POLICY_LOSSES` and what every loss
 * shares. Each loss lives in its own file under `policy_losses/` (registered on import by
 * `policy_losses/all.ts`) as a plain-loop reference over `[B, R]` arrays: its scalar pg_loss, the
 * metrics verl's function returns (actor/pg_clipfrac, actor/ppo_kl, actor/pg_clipfrac_lower, each
 * only where verl reports it), and the backward d pg_loss / d logProb that the GPU update chains
 * into the logprob kernel. The GPU forms are in `gpu/` (GPU_POLICY_LOSSES).
 *
 * @module
 */

import { aggLoss, aggLossWeights, type AggOptions, type LossAggMode } from "./agg.ts";
import { checkSameLength, like, type Mask, rowsOf, type Vec } from "./masked.ts";
import { Registry } from "../tensor/mod.ts";

/** Per-token inputs, each `[B, R]`; one call is one micro-batch, as in verl's dp_actor. */
export interface PolicyLossInputs {
  R: number;
  oldLogProb: Vec;
  logProb: Vec;
  advantages: Vec;
  responseMask: Mask;
}

/** `actor.*` / `actor.policy_loss.*` settings in camelCase; verl's defaults in brackets. */
export interface PolicyLossOptions extends Omit<AggOptions, "R"> {
  /** [token-mean]; gspo and sapo always use seq-mean-token-mean, geo_mean a mean per sequence */
  lossAggMode?: LossAggMode;
  /** ε [0.2] */
  clipRatio?: number;
  /** lower ε [clipRatio] */
  clipRatioLow?: number;
  /** upper ε [clipRatio] */
  clipRatioHigh?: number;
  /** vanilla: dual-clip bound c for negative advantages, must be > 1 [3.0] */
  clipRatioC?: number;
  /** sapo: gate temperature where A > 0 (actor.tau_pos) [1.0] */
  tauPos?: number;
  /** sapo: gate temperature where A <= 0 (actor.tau_neg) [1.05] */
  tauNeg?: number;
  /** clip_cov: fraction of the valid tokens whose loss is cut (policy_loss.clip_cov_ratio) [0.0002] */
  clipCovRatio?: number;
  /** clip_cov: candidates have covariance > this (policy_loss.clip_cov_lb) [1.0] */
  clipCovLb?: number;
  /** clip_cov: candidates have covariance < this (policy_loss.clip_cov_ub) [5.0] */
  clipCovUb?: number;
  /** kl_cov: fraction of the valid tokens that get the KL term (policy_loss.kl_cov_ratio) [0.0002] */
  klCovRatio?: number;
  /** kl_cov: weight of |log ratio| on the chosen tokens (policy_loss.ppo_kl_coef) [0.1] */
  ppoKlCoef?: number;
  /** reinforce: importance weights against the rollout policy, per token or sequence [null] */
  rolloutIs?: "token" | "sequence" | null;
  /** reinforce: upper bound of those weights (rollout_correction.rollout_is_threshold) [2.0] */
  rolloutIsThreshold?: number;
  /** clip_cov: seed of the random choice among candidate tokens [0] */
  seed?: number;
  /**
   * For checking gradients against finite differences of the surrogate autograd sees: the value
   * standing in for the stop-gradient sg(logProb) (gspo's sequence ratio, cispo's clipped ratio,
   * the covariance ranking of clip_cov / kl_cov); defaults to logProb itself.
   */
  detachedLogProb?: Vec;
}

/** The metric names a policy loss may report (verl's pg_metrics keys). */
export const POLICY_LOSS_METRICS = [
  "actor/pg_clipfrac",
  "actor/ppo_kl",
  "actor/pg_clipfrac_lower",
] as const;

/** One of `POLICY_LOSS_METRICS`. */
export type PolicyLossMetric = typeof POLICY_LOSS_METRICS[number];

/** The scalar loss, verl's metrics and the backward. */
export interface PolicyLossResult {
  pgLoss: number;
  /** exactly the metrics of the loss's registry entry, under verl's names */
  metrics: Partial<Record<PolicyLossMetric, number>>;
  /** per-token loss before aggregation, `[B, R]`; absent for geo_mean (a loss per sequence) */
  pgLosses?: Vec;
  /** d pgLoss / d logProb, `[B, R]`, 0 on invalid tokens */
  gradLogProb: Vec;
}

/** The reference function of a policy loss. */
export type PolicyLossFn = (
  inputs: PolicyLossInputs,
  options: PolicyLossOptions,
) => PolicyLossResult;

/**
 * `actor_rollout_ref.actor.*` keys that only some policy losses read (paths under `actor`).
 * clip_ratio itself is only the fallback of clip_ratio_low / clip_ratio_high.
 */
export const POLICY_LOSS_KEYS = [
  "clip_ratio_low",
  "clip_ratio_high",
  "clip_ratio_c",
  "tau_pos",
  "tau_neg",
  "policy_loss.clip_cov_ratio",
  "policy_loss.clip_cov_lb",
  "policy_loss.clip_cov_ub",
  "policy_loss.kl_cov_ratio",
  "policy_loss.ppo_kl_coef",
] as const;

/** One of `POLICY_LOSS_KEYS`. */
export type PolicyLossKey = typeof POLICY_LOSS_KEYS[number];

/** A registered policy loss. */
export interface PolicyLossEntry {
  compute: PolicyLossFn;
  /** the metrics verl's function returns for it (dp_actor reports pg_loss for every loss) */
  metrics: readonly PolicyLossMetric[];
  /** the loss-specific keys it reads; the config rejects a changed key it does not read */
  keys: readonly PolicyLossKey[];
  /** one line for the config docs */
  doc: string;
}

/** Policy losses by verl name, in verl's registration order. */
export const POLICY_LOSSES: Registry<PolicyLossEntry> = new Registry("policy loss");

/** Runs the policy loss `name` (throws listing valid names when unknown). */
export function computePolicyLoss(
  name: string,
  inputs: PolicyLossInputs,
  options: PolicyLossOptions = {},
): PolicyLossResult {
  const entry = POLICY_LOSSES.get(name);
  const { oldLogProb, logProb, advantages, responseMask } = inputs;
  checkSameLength({ logProb, oldLogProb, advantages, responseMask });
  if (options.detachedLogProb) {
    checkSameLength({ logProb, detachedLogProb: options.detachedLogProb });
  }
  rowsOf(logProb.length, inputs.R);
  const out = entry.compute(inputs, options);
  const got = Object.keys(out.metrics).sort().join(", "),
    want = [...entry.metrics].sort().join(", ");
  if (got !== want) throw new Error(`policy loss "${name}" reported [${got}], declared [${want}]`);
  return out;
}

/** Clip range ε_low / ε_high and the dual-clip constant, verl's fallbacks applied. */
export function clipRange(o: PolicyLossOptions): { low: number; high: number; c: number } {
  const eps = o.clipRatio ?? 0.2;
  return { low: o.clipRatioLow ?? eps, high: o.clipRatioHigh ?? eps, c: o.clipRatioC ?? 3.0 };
}

/**
 * r = exp(clamp(x, -20, 20)) and dr/dx (0 where the clamp is active), verl's stabilised ratio of
 * vanilla, sapo and cispo.
 */
export function clampedRatio(x: number): { ratio: number; dRatio: number; logRatio: number } {
  const logRatio = Math.min(Math.max(x, -20), 20), ratio = Math.exp(logRatio);
  return { ratio, dRatio: x >= -20 && x <= 20 ? ratio : 0, logRatio };
}

/** What a token-level loss computes for one valid token. */
export interface TokenTerm {
  /** the token's loss L_t */
  loss: number;
  /** dL_t / dlogp_t as autograd sees it */
  grad: number;
  /** 1 when the token counts towards pg_clipfrac */
  clipped?: number;
  /** the token's ppo_kl term */
  kl: number;
  /** 1 when the token counts towards pg_clipfrac_lower */
  lower?: number;
}

/**
 * A loss of per-token terms: pg_loss = agg_mode(L), gradient w_t · dL_t/dlogp_t with w the
 * aggregation weights, metrics the token means of the terms (only those in `metrics`).
 */
export function tokenLevelLoss(
  inp: PolicyLossInputs,
  o: PolicyLossOptions,
  mode: LossAggMode,
  metrics: readonly PolicyLossMetric[],
  term: (i: number) => TokenTerm,
): PolicyLossResult {
  const { responseMask: mask, R, logProb } = inp;
  const agg = { ...o, R };
  const w = aggLossWeights(mask, mode, agg);
  const pgLosses = like(logProb), grad = like(logProb);
  let n = 0, clipped = 0, kl = 0, lower = 0;
  for (let i = 0; i < logProb.length; i++) {
    if (mask[i] === 0) continue; // padding may hold garbage; it never reaches the loss
    const t = term(i);
    pgLosses[i] = t.loss;
    grad[i] = w[i] * t.grad;
    (n++, clipped += t.clipped ?? 0, kl += t.kl, lower += t.lower ?? 0);
  }
  const mean = (s: number) => (n === 0 ? 0 : s / n);
  const all: Record<PolicyLossMetric, number> = {
    "actor/pg_clipfrac": mean(clipped),
    "actor/ppo_kl": mean(kl),
    "actor/pg_clipfrac_lower": mean(lower),
  };
  return {
    pgLoss: aggLoss(pgLosses, mask, mode, agg),
    metrics: Object.fromEntries(metrics.map((k) => [k, all[k]])),
    pgLosses,
    gradLogProb: grad,
  };
}
