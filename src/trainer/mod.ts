/**
 * The trainer: `fit()` over the named stages of a PPO/GRPO step (stages/), the parts it runs on
 * (built from files by `setupTrainer` in Deno, from memory by `buildTrainerParts` in a browser),
 * SFT, checkpoints, and the generation and evaluation jobs (verl's main_generation / main_eval).
 */
export { fit, type FitResult, totalSteps, trainStep } from "./ppo_trainer.ts";
export {
  type CheckpointStore,
  type GenerationRow,
  type PromptLoader,
  type RolloutFn,
  type TrainerParts,
  type TurnRolloutFn,
  type TurnRolloutOptions,
} from "./parts.ts";
export {
  type AdvBatch,
  type Batch,
  type GenBatch,
  type ScoredBatch,
  type SequenceInputs,
  sequenceInputs,
} from "./batch.ts";
export {
  adaptersOff,
  buildTrainerParts,
  loraBaseDtype,
  makeOptimizer,
  type ModelWeights,
  type RolloutPrecision,
  rolloutPrecision,
} from "./build.ts";
export { applyPrecision, type TrainPrecision } from "./precision.ts";
export {
  type EnginePool,
  rolloutFor,
  type RolloutForOptions,
  turnRolloutFor,
} from "./rollout_fn.ts";
export { readWeights, runFolder, setupTrainer, tokenizerFromFiles } from "./setup.ts";
export { attachRemote, type RemoteSetupOptions } from "./remote_setup.ts";
export { PeekLoader } from "./peek_loader.ts";
export { sftFit, type SftFitOptions, type SftFitResult } from "./sft_trainer.ts";
export { setupSft, type SftRun } from "./sft_setup.ts";
export { noStepError, type StepKeys, stepsSetBy } from "./run_check.ts";
export {
  type AgentEnv,
  agentLoopOptions,
  agentSample,
  closeAgentEnv,
  loadAgentEnv,
  type MultiTurnConfig,
  trajectoryExtraInfo,
} from "./agent.ts";
export { saveCheckpoint } from "./checkpoint/manager.ts";
export { save as saveStep } from "./stages/save.ts";
export { validate } from "./stages/validate.ts";
export { writeModel } from "./checkpoint/store.ts";
export { type ActorUpdateOptions, computeLogProbs, updateActor } from "./actor.ts";
export { actorLossOptions } from "./stages/update_actor.ts";
export { computeValues, type CriticUpdateOptions, updateCritic } from "./critic.ts";
export {
  type GenerationModel,
  type GenerationSummary,
  runGeneration,
  tinyGenerationModel,
  type WeightsDtype,
} from "./main_generation.ts";
export { mergeLoraFolder, type MergeSummary } from "./merge_lora.ts";
export {
  checkpointArrays,
  loraFromCheckpoint,
  type LoraKeys,
  type LoraStart,
  loraStart,
} from "./lora.ts";
export { evaluateResponses, type EvaluationResult } from "./main_eval.ts";
