/** The PPO/GRPO trainer schema (verl's ppo_trainer.yaml): its sections plus the cross-key rules. */
import { checkPpo, normalizePpo } from "./ppo_checks.ts";
import { type PpoConfig, ppoRoot } from "./ppo_root.ts";
import type { ConfigSchema } from "./schema.ts";

export type { PpoConfig };

export const ppoTrainerSchema: ConfigSchema<typeof ppoRoot> = {
  name: "ppo_trainer",
  title: "PPO/GRPO trainer config: every key with its default. Override any key from the " +
    "command line, e.g. `deno task train data.train_batch_size=16 algorithm.adv_estimator=grpo`.",
  root: ppoRoot,
  check: checkPpo,
  normalize: normalizePpo,
  conditionalPaths: [{
    key: "trainer.resume_from_path",
    when: (c) => c.trainer.resume_mode === "resume_path",
  }],
};
