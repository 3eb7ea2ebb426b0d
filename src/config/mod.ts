/**
 * Typed configs with verl's key names: the PPO/GRPO trainer, the generator, the SFT trainer and
 * the evaluator. `loadConfig(name, {files, overrides})` merges defaults, YAML files and dotted
 * overrides and rejects anything it cannot use, naming the key.
 */
export { ConfigError } from "./errors.ts";
export { expandHome, loadConfig, type LoadOptions, schemaByName } from "./load.ts";
export { parseOverride } from "./overrides.ts";
export { type ConfigByName, type SchemaName, SCHEMAS } from "./registry.ts";
export type { ConfigSchema, Field, FieldSpec, Infer, Section } from "./schema.ts";
export { walkFields } from "./schema.ts";
export { configFromYaml, configToYaml, formatConfig, schemaToYaml } from "./yaml_io.ts";
export { type PpoConfig, ppoTrainerSchema } from "./ppo_trainer.ts";
export { criticEnabled, sumPiSquaredEnabled } from "./ppo_checks.ts";
export { checkContextLength, type ContextLengths } from "./context_length.ts";
export { type GenerationConfig, generationSchema } from "./generation.ts";
export {
  ENGINE_MAX_NUM_SEQS,
  enginePoolBlocks,
  enginePoolOptions,
  type EngineSettings,
  engineSettings,
  type RolloutDtype,
} from "./ppo_rollout.ts";
export { type SftConfig, sftTrainerSchema } from "./sft_trainer.ts";
export { type EvaluationConfig, evaluationSchema } from "./evaluation.ts";
export { PRECISION_NAMES, type PrecisionName } from "./fsdp_engine.ts";
export { dataSeed } from "./ppo_data.ts";
