/** The evaluator schema (verl's evaluation.yaml): a parquet with responses in, scores out. */
import { ppoCustomReward } from "./ppo_critic.ts";
import { type ConfigSchema, type Infer, section, str } from "./schema.ts";

export const evaluationRoot = section("Offline scoring of generated responses.", {
  data: section("Input parquet and its columns.", {
    path: str("outputs/generations.parquet", "Parquet with a list-of-strings responses column.", {
      isPath: true,
    }),
    response_key: str("responses", "Column of generated responses (list of strings per row)."),
    data_source_key: str("data_source", "Column naming the dataset (selects the scorer)."),
    reward_model_key: str("reward_model", "Struct column holding ground_truth."),
  }),
  custom_reward_function: ppoCustomReward,
});

export type EvaluationConfig = Infer<typeof evaluationRoot>;

export const evaluationSchema: ConfigSchema<typeof evaluationRoot> = {
  name: "evaluation",
  title: "Evaluator config (deno task eval): mean score per data_source.",
  root: evaluationRoot,
};
