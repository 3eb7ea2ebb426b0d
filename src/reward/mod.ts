/**
 * Rewards: verl's compute_score signature, the built-in scorers dispatched on data_source, the
 * naive reward manager, and user reward functions run in a sandboxed worker.
 */
export { ARITHMETIC_DATA_SOURCE, arithmeticScore, CALC_TOOL_DATA_SOURCE } from "./arithmetic.ts";
export {
  defaultComputeScore,
  KNOWN_DATA_SOURCES,
  UnknownDataSourceError,
} from "./default_score.ts";
export {
  extractGsm8kAnswer,
  type Gsm8kMethod,
  type Gsm8kOptions,
  gsm8kScore,
  SOLUTION_CLIP_CHARS,
} from "./gsm8k.ts";
export { type ExactMatchOptions, exactMatchScore } from "./exact_match.ts";
export { InProcessScorer } from "./in_process.ts";
export {
  extractAnswer,
  goldenAnswers,
  normalizeAnswer,
  QA_DATA_SOURCES,
  qaEmScore,
  SEARCH_SYNTH_DATA_SOURCE,
} from "./qa_em.ts";
export {
  type RewardBatch,
  type RewardFailure,
  RewardManager,
  type RewardManagerOptions,
  type RewardResult,
} from "./manager.ts";
export {
  createRewardManager,
  type CustomRewardConfig,
  rewardManagerOptions,
  type RewardModelConfig,
} from "./create.ts";
export { checkOverlongBuffer, type OverlongBuffer, overlongPenalty } from "./overlong.ts";
export {
  lastBoxed,
  mathEquivalent,
  type MathOptions,
  mathScore,
  normalizeMathAnswer,
} from "./math.ts";
export { rewardModuleProblem, SandboxedRewardFunction, type SandboxOptions } from "./sandbox.ts";
export type {
  BatchScorer,
  ComputeScore,
  FailureKind,
  ScoreOutcome,
  ScoreRequest,
  ScoreValue,
} from "./types.ts";
