/** Schemas by name, as `loadConfig("ppo_trainer", ...)` takes them. */
import { type EvaluationConfig, evaluationSchema } from "./evaluation.ts";
import { type GenerationConfig, generationSchema } from "./generation.ts";
import { type PpoConfig, ppoTrainerSchema } from "./ppo_trainer.ts";
import type { ConfigSchema } from "./schema.ts";
import { type SftConfig, sftTrainerSchema } from "./sft_trainer.ts";

/** Resolved config type per schema name. */
export interface ConfigByName {
  ppo_trainer: PpoConfig;
  generation: GenerationConfig;
  sft_trainer: SftConfig;
  evaluation: EvaluationConfig;
}

/** Names `loadConfig` accepts. */
export type SchemaName = keyof ConfigByName;

export const SCHEMAS: { [N in SchemaName]: ConfigSchema } = {
  ppo_trainer: ppoTrainerSchema as unknown as ConfigSchema,
  generation: generationSchema as unknown as ConfigSchema,
  sft_trainer: sftTrainerSchema as unknown as ConfigSchema,
  evaluation: evaluationSchema as unknown as ConfigSchema,
};
