/**
 * KL estimators between the policy and the reference policy, their gradients,
 * the in-reward KL penalty (`algorithm.use_kl_in_reward`) and the KL
 * coefficient controllers (`algorithm.kl_ctrl`).
 *
 * Estimators, with x = logprob - refLogprob (see J. Schulman, "Approximating
 * KL divergence"):
 *   kl / k1:          x
 *   abs:              |x|
 *   mse / k2:         x² / 2
 *   low_var_kl / k3:  e^(-x) - (-x) - 1 = e^u - u - 1 with u = clamp(-x, -20, 20),
 *                     the result clamped to [-10, 10]
 *   <name>+:          straight-through: the forward value of <name>, the gradient of k2.
 *
 * Straight-through ("k3+" etc.): k1 and k3 are unbiased for the KL value but their
 * gradients are not unbiased for the KL gradient; k2's is. verl builds
 * `k2 - sg(k2) + sg(base)`, whose value is `base` and whose derivative is k2's,
 * d/dlogprob = x. A fused GPU loss kernel implements it by writing the base
 * estimator's value into the loss and `klLossCoef · w · x` into the logprob
 * gradient (w = the aggregation weight of the token); `klPenaltyGrad` gives
 * exactly that per-token derivative for every name.
 *
 * @module
 */

import { checkSameLength, like, type Mask, rowMaskedMean, rowsOf, type Vec } from "./masked.ts";
import { Registry } from "../tensor/mod.ts";

/** Value and d value / d logprob of one estimator at x = logprob - refLogprob. */
interface KlEstimator {
  value: (x: number) => number;
  grad: (x: number) => number;
}

const k1: KlEstimator = { value: (x) => x, grad: () => 1 };
// torch's abs has gradient sign(x), 0 at 0.
const absKl: KlEstimator = { value: (x) => Math.abs(x), grad: (x) => Math.sign(x) };
const k2: KlEstimator = { value: (x) => 0.5 * x * x, grad: (x) => x };
// torch.clamp passes the gradient only inside [min, max] (inclusive), hence the two guards.
const k3: KlEstimator = {
  value: (x) => {
    const u = Math.min(Math.max(-x, -20), 20);
    return Math.min(Math.max(Math.exp(u) - u - 1, -10), 10);
  },
  grad: (x) => {
    const u = -x;
    if (u < -20 || u > 20) return 0;
    const kld = Math.exp(u) - u - 1;
    return kld > 10 ? 0 : 1 - Math.exp(u); // d/dx of (e^u - u - 1) with u = -x
  },
};

/** KL estimators by verl name (`kl_penalty`, `kl_loss_type`). */
export const KL_ESTIMATORS: Registry<KlEstimator> = new Registry("KL estimator");
for (
  const [names, est] of [[["kl", "k1"], k1], [["abs"], absKl], [["mse", "k2"], k2], [
    ["low_var_kl", "k3"],
    k3,
  ]] as const
) {
  for (const name of names) {
    KL_ESTIMATORS.register(name, est);
    KL_ESTIMATORS.register(`${name}+`, { value: est.value, grad: k2.grad });
  }
}

/** Elementwise KL estimate `[N]` (any shape) of the named type. */
export function klPenalty(logprob: Vec, refLogprob: Vec, type: string): Vec {
  const est = KL_ESTIMATORS.get(type);
  checkSameLength({ logprob, refLogprob });
  const out = like(logprob);
  for (let i = 0; i < out.length; i++) out[i] = est.value(logprob[i] - refLogprob[i]);
  return out;
}

/** Elementwise d klPenalty / d logprob as autograd sees it (k2's for the `+` types). */
export function klPenaltyGrad(logprob: Vec, refLogprob: Vec, type: string): Vec {
  const est = KL_ESTIMATORS.get(type);
  checkSameLength({ logprob, refLogprob });
  const out = like(logprob);
  for (let i = 0; i < out.length; i++) out[i] = est.grad(logprob[i] - refLogprob[i]);
  return out;
}

/** Inputs of `applyKlPenalty`, each `[B, R]`. */
export interface KlPenaltyInputs {
  R: number;
  tokenLevelScores: Vec;
  /** log-probs of the rollout policy (verl's `old_log_probs`) */
  oldLogProbs: Vec;
  refLogProb: Vec;
  responseMask: Mask;
}

/** Result of `applyKlPenalty`. */
export interface KlPenaltyResult {
  /** scores - β·KL·mask, `[B, R]` */
  tokenLevelRewards: Vec;
  /** per-token KL times mask, `[B, R]` */
  kld: Vec;
  /** batch mean of per-sequence masked-mean KL; feed to `controller.update(currentKl, B)` */
  currentKl: number;
  /** verl's metric names for this step */
  metrics: { "actor/reward_kl_penalty": number; "actor/reward_kl_penalty_coeff": number };
}

/**
 * verl's `apply_kl_penalty`: kld = KL(old, ref)·mask; rewards = scores - β·kld;
 * currentKl = mean_b( Σ_t kld[b,t] / Σ_t mask[b,t] ) (an all-padding row counts as 0).
 * Pure: the caller then calls `controller.update(currentKl, B)`, as verl does inside.
 */
export function applyKlPenalty(
  inputs: KlPenaltyInputs,
  options: { beta: number; klPenalty?: string },
): KlPenaltyResult {
  const { R, tokenLevelScores: scores, oldLogProbs, refLogProb, responseMask: mask } = inputs;
  checkSameLength({ tokenLevelScores: scores, oldLogProbs, refLogProb, responseMask: mask });
  const B = rowsOf(scores.length, R);
  const kld = klPenalty(oldLogProbs, refLogProb, options.klPenalty ?? "kl");
  const rewards = like(scores);
  for (let i = 0; i < kld.length; i++) {
    if (mask[i] === 0) kld[i] = 0;
    rewards[i] = scores[i] - options.beta * kld[i];
  }
  const perSeq = rowMaskedMean(kld, mask, R);
  const currentKl = B === 0 ? 0 : perSeq.reduce((a, b) => a + b, 0) / B;
  return {
    tokenLevelRewards: rewards,
    kld,
    currentKl,
    metrics: {
      "actor/reward_kl_penalty": currentKl,
      "actor/reward_kl_penalty_coeff": options.beta,
    },
  };
}

/** Checkpointable controller state (goes into the checkpoint's `extra`). */
export type KlControllerState =
  | { type: "fixed"; value: number }
  | { type: "adaptive"; value: number; target: number; horizon: number };

/** A KL coefficient source: `value` is β for the current step. */
export interface KlController {
  readonly value: number;
  update(currentKl: number, nSteps: number): void;
  state(): KlControllerState;
  restore(state: KlControllerState): void;
}

/** Constant β. */
export class FixedKLController implements KlController {
  constructor(public value: number) {}
  /** No-op: a fixed coefficient ignores the measured KL. */
  update(_currentKl: number, _nSteps: number): void {}
  state(): KlControllerState {
    return { type: "fixed", value: this.value };
  }
  restore(state: KlControllerState): void {
    if (state.type !== "fixed") throw new Error(`cannot restore a ${state.type} KL controller`);
    this.value = state.value;
  }
}

/**
 * Adaptive β (Ziegler et al. 2019, arXiv:1909.08593):
 * e = clip(currentKl / target - 1, -0.2, 0.2);  β <- β · (1 + e · nSteps / horizon).
 */
export class AdaptiveKLController implements KlController {
  constructor(public value: number, public target: number, public horizon: number) {
    if (!(horizon > 0)) throw new Error(`kl_ctrl.horizon must be > 0, got ${horizon}`);
  }
  update(currentKl: number, nSteps: number): void {
    const e = Math.min(Math.max(currentKl / this.target - 1, -0.2), 0.2);
    this.value *= 1 + (e * nSteps) / this.horizon;
  }
  state(): KlControllerState {
    return { type: "adaptive", value: this.value, target: this.target, horizon: this.horizon };
  }
  restore(state: KlControllerState): void {
    if (state.type !== "adaptive") throw new Error(`cannot restore a ${state.type} KL controller`);
    ({ value: this.value, target: this.target, horizon: this.horizon } = state);
  }
}

/** verl's `algorithm.kl_ctrl` block (snake_case, as in the YAML). */
export interface KlCtrlConfig {
  type: string;
  kl_coef: number;
  target_kl?: number;
  horizon?: number;
}

/** Builds the controller `algorithm.kl_ctrl` describes (verl's `get_kl_controller`). */
export function createKlController(cfg: KlCtrlConfig): KlController {
  if (cfg.type === "fixed") return new FixedKLController(cfg.kl_coef);
  if (cfg.type === "adaptive") {
    if (cfg.target_kl === undefined || cfg.horizon === undefined) {
      throw new Error("adaptive kl_ctrl needs target_kl and horizon");
    }
    return new AdaptiveKLController(cfg.kl_coef, cfg.target_kl, cfg.horizon);
  }
  throw new Error(`unknown kl_ctrl.type "${cfg.type}"; valid names: fixed, adaptive`);
}

/** Rebuilds a controller from `state()` output (checkpoint resume). */
export function klControllerFromState(state: KlControllerState): KlController {
  return state.type === "fixed"
    ? new FixedKLController(state.value)
    : new AdaptiveKLController(state.value, state.target, state.horizon);
}
