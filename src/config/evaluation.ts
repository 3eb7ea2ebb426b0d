/** The evaluator schema (verl's evaluation.yaml): a parquet with responses in, scores out. */
import { checkCustomReward } from "./custom_reward.ts";
import { ppoCustomReward } from "./ppo_reward.ts";
import { type ConfigSchema, float, type Infer, section, str } from "./schema.ts";

export const evaluationRoot = section("Offline scoring of generated responses.", {
  data: section("Input parquet and its columns.", {
    path: str("outputs/generations.parquet", "Parquet with a list-of-strings responses column.", {
      isPath: true,
    }),
    response_key: str("responses", "Column of generated responses (list of strings per row)."),
    data_source_key: str("data_source", "Column naming the dataset (selects the scorer)."),
    reward_model_key: str("reward_model", "Struct column holding ground_truth."),
    max_failed_ratio: float(
      0.5,
      "Fail (exit 1) when more than this fraction of the responses got no score (the reward " +
        "threw, timed out, returned no number, or the data_source has no scorer); the " +
        "evaluation also fails when every response failed, whatever the ratio.",
      { min: 0, max: 1 },
    ),
  }),
  custom_reward_function: ppoCustomReward,
});

export type EvaluationConfig = Infer<typeof evaluationRoot>;

export const evaluationSchema: ConfigSchema<typeof evaluationRoot> = {
  name: "evaluation",
  title: "Evaluator config (deno task eval): mean score per data_source.",
  root: evaluationRoot,
  check: (cfg) => checkCustomReward(cfg.custom_reward_function),
};
