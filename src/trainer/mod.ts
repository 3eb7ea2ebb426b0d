/** Public face of src/trainer. */
export { type GenerationSummary, runGeneration } from "./main_generation.ts";
export { fit, type FitResult, trainStep } from "./ppo_trainer.ts";
export { readWeights, setupTrainer, tokenizerFromFiles } from "./setup.ts";
export { evaluateResponses } from "./main_eval.ts";
export { saveCheckpoint } from "./checkpoint/manager.ts";
export { writeModel } from "./checkpoint/store.ts";
export { buildTrainerParts, makeOptimizer } from "./build.ts";
export { sftFit } from "./sft_trainer.ts";
export { type GenerationRow, type TrainerParts } from "./parts.ts";
export { type PromptItem } from "./stages.ts";
