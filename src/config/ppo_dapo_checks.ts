/** Cross-key rules of DAPO's pieces: dynamic sampling (filter_groups) and overlong_buffer. */
import { ConfigError } from "./errors.ts";
import type { PpoConfig } from "./ppo_root.ts";

export function checkDapo(cfg: PpoConfig): void {
  const fg = cfg.algorithm.filter_groups, data = cfg.data;
  if (fg.enable && fg.metric === null) {
    throw new ConfigError(
      "algorithm.filter_groups.metric",
      "algorithm.filter_groups.enable=true needs algorithm.filter_groups.metric: seq_reward, " +
        "seq_final_reward, or a reward_extra_info column such as acc (reward_manager=dapo) or score",
    );
  }
  if (fg.enable && fg.metric === "seq_final_reward" && cfg.algorithm.use_kl_in_reward) {
    throw new ConfigError(
      "algorithm.filter_groups.metric",
      "algorithm.filter_groups.metric=seq_final_reward with algorithm.use_kl_in_reward=true " +
        "would need the KL penalty before filtering, which is not supported: use seq_reward",
    );
  }
  if (!fg.enable) {
    if (data.gen_batch_size !== data.train_batch_size) {
      throw new ConfigError(
        "data.gen_batch_size",
        `data.gen_batch_size=${data.gen_batch_size} differs from data.train_batch_size=` +
          `${data.train_batch_size}: without algorithm.filter_groups.enable=true every ` +
          "generated prompt is trained on; remove data.gen_batch_size",
      );
    }
  }
  const ob = cfg.reward_model.overlong_buffer;
  // A disabled section's parameters are kept as verl keeps them (DAPO scripts toggle enable).
  if (!ob.enable) return;
  if (cfg.reward_model.reward_manager !== "dapo") {
    throw new ConfigError(
      "reward_model.reward_manager",
      "reward_model.overlong_buffer.enable=true is applied by the dapo reward manager: set " +
        "reward_model.reward_manager=dapo",
    );
  }
  if (ob.len < 1 || ob.len > data.max_response_length) {
    throw new ConfigError(
      "reward_model.overlong_buffer.len",
      `reward_model.overlong_buffer.len=${ob.len} must be in [1, data.max_response_length=` +
        `${data.max_response_length}]`,
    );
  }
}
