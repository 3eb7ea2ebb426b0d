/** Checks of `custom_reward_function.*`, shared by the trainer and evaluator schemas. */
import { rewardModuleProblem } from "../reward/mod.ts";
import { ConfigError } from "./errors.ts";

/** The keys checked; both schemas hold them under `custom_reward_function`. */
export interface CustomRewardKeys {
  path: string | null;
  timeout_s: number;
  batch_timeout_s: number | null;
}

/** A Python reward module, or a time limit of 0, is refused naming the key and value. */
export function checkCustomReward(c: CustomRewardKeys): void {
  const key = "custom_reward_function";
  const problem = c.path === null ? null : rewardModuleProblem(c.path, `${key}.path`);
  if (problem) throw new ConfigError(`${key}.path`, problem);
  if (c.timeout_s <= 0) {
    throw new ConfigError(
      `${key}.timeout_s`,
      `${key}.timeout_s=${c.timeout_s}: every sample would time out; give seconds > 0`,
    );
  }
  if (c.batch_timeout_s !== null && c.batch_timeout_s <= 0) {
    throw new ConfigError(
      `${key}.batch_timeout_s`,
      `${key}.batch_timeout_s=${c.batch_timeout_s}: no sample would be scored; give seconds > 0, ` +
        "or null for no budget",
    );
  }
}
