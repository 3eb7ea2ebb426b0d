/**
 * PPO / GRPO algorithms as pure functions over typed arrays, following verl's
 * `core_algos` (names, config keys, metric names). See `masked.ts` for the
 * array conventions: `[B, R]` row-major flat arrays, 0/1 masks (Float32Array
 * canonical), `R` passed in, B derived.
 *
 * @module
 */

export { type Mask, type Vec } from "./masked.ts";
export {
  like,
  maskCount,
  maskedMax,
  maskedMean,
  maskedMin,
  maskedSum,
  maskedVar,
  maskedWhiten,
  rowMaskedMean,
  rowsOf,
} from "./masked.ts";
export {
  groupIndex,
  groupStats,
  groupStatsReference,
  sequenceLengths,
  sequenceScores,
} from "./group.ts";
import "./estimators/all.ts";

export {
  ADV_ESTIMATORS,
  type AdvantageEstimator,
  type AdvantageEstimatorEntry,
  type AdvantageInputs,
  type AdvantageOptions,
  type AdvantageResult,
  computeAdvantage,
  gaeScan,
  gaeScanReference,
} from "./advantage.ts";
export {
  AdaptiveKLController,
  applyKlPenalty,
  createKlController,
  FixedKLController,
  KL_ESTIMATORS,
  type KlController,
  klControllerFromState,
  type KlControllerState,
  type KlCtrlConfig,
  klPenalty,
  klPenaltyGrad,
  type KlPenaltyInputs,
  type KlPenaltyResult,
} from "./kl.ts";
export {
  aggLoss,
  aggLossWeights,
  type AggOptions,
  checkLossAggMode,
  LOSS_AGG_MODES,
  type LossAggMode,
} from "./agg.ts";
export {
  computePolicyLoss,
  POLICY_LOSS_KEYS,
  POLICY_LOSS_METRICS,
  POLICY_LOSSES,
  type PolicyLossEntry,
  type PolicyLossFn,
  type PolicyLossInputs,
  type PolicyLossKey,
  type PolicyLossMetric,
  type PolicyLossOptions,
  type PolicyLossResult,
} from "./policy_loss.ts";
import "./policy_losses/all.ts";
export {
  type ActorLossInputs,
  type ActorLossOptions,
  type ActorLossResult,
  computeActorLoss,
} from "./actor_loss.ts";
export {
  computeValueLoss,
  type ValueLossInputs,
  type ValueLossOptions,
  type ValueLossResult,
} from "./value_loss.ts";
export {
  approxKl,
  computeDataMetrics,
  type DataMetricsInputs,
  explainedVariance,
  rolloutProbsDiff,
} from "./metrics.ts";
// GPU ops of the same formulas (the trainer's path; the functions above are their references).
export {
  POLICY_LOSS_STATS,
  type PpoLossResult,
  ppoPolicyLoss,
  type PpoPolicyLossOptions,
} from "./gpu/ppo_loss.ts";
export { GPU_POLICY_LOSSES, type GpuPolicyLoss, gpuPolicyLoss } from "./gpu/ppo_loss_modes.ts";
export {
  VALUE_LOSS_STATS,
  valueLoss,
  type ValueLossOptions as GpuValueLossOptions,
} from "./gpu/ppo_loss_value.ts";
export { gae, type GaeOptions, type GaeResult } from "./gpu/gae.ts";
export {
  ESTIMATOR_TABLE_BEGIN,
  ESTIMATOR_TABLE_END,
  estimatorTable,
  estimatorTableRows,
} from "./estimators/table.ts";
export { sumPiSquaredRef } from "./sum_pi_squared.ts";
export { sumPiSquared } from "./gpu/sum_pi_squared.ts";
export { type RolloutIsLevel, type RolloutIsResult, rolloutIsWeights } from "./rollout_is.ts";
