/**
 * verl's second homes of a setting in the PPO config: `actor_rollout_ref.model.tokenizer_path`
 * (data.tokenizer), `reward_manager.name` (reward_model.reward_manager) and `rollout.mtp` (a copy
 * of model.mtp). Each is moved onto the key the trainer reads, or checked against it.
 */
import { ConfigError } from "./errors.ts";
import { ppoRewardModel } from "./ppo_reward.ts";
import type { PpoConfig } from "./ppo_root.ts";
import { DENSE_MODELS } from "./verl_reasons.ts";

/** The reward manager when reward_model.reward_manager is not set. */
const DEFAULT_MANAGER = ppoRewardModel.fields.reward_manager.spec.default;

/** Moves verl's newer spellings onto the keys the trainer reads; differing values fail. */
export function normalizeVerlAliases(cfg: PpoConfig): void {
  const tokenizerPath = cfg.actor_rollout_ref.model.tokenizer_path;
  if (tokenizerPath !== null) {
    if (cfg.data.tokenizer !== null && cfg.data.tokenizer !== tokenizerPath) {
      throw new ConfigError(
        "actor_rollout_ref.model.tokenizer_path",
        `actor_rollout_ref.model.tokenizer_path=${tokenizerPath} and data.tokenizer=` +
          `${cfg.data.tokenizer} name different tokenizer folders; set one`,
      );
    }
    cfg.data.tokenizer = tokenizerPath;
  }
  const name = cfg.reward_manager.name, legacy = cfg.reward_model.reward_manager;
  if (name !== legacy) {
    // reward_manager.name defaults to reward_model.reward_manager, so it was set on its own
    if (legacy !== DEFAULT_MANAGER) {
      throw new ConfigError(
        "reward_manager.name",
        `reward_manager.name=${name} and reward_model.reward_manager=${legacy} differ; set one ` +
          "(reward_manager.name is verl's newer key)",
      );
    }
    cfg.reward_model.reward_manager = name;
  }
}

/** rollout.mtp (verl's copy of model.mtp) must not switch multi-token prediction on. */
export function checkRolloutMtp(cfg: PpoConfig): void {
  const mtp = cfg.actor_rollout_ref.rollout.mtp;
  for (const key of ["enable", "enable_rollout"]) {
    if (mtp !== null && mtp[key] !== undefined && mtp[key] !== false) {
      throw new ConfigError(
        `actor_rollout_ref.rollout.mtp.${key}`,
        `actor_rollout_ref.rollout.mtp.${key}=${JSON.stringify(mtp[key])} is not supported: ` +
          `${DENSE_MODELS} (leave it false)`,
      );
    }
  }
}
