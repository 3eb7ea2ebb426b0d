/** Cross-key rules of `distributed.*` and `algorithm.rollout_correction`. */
import { ConfigError } from "./errors.ts";
import type { PpoConfig } from "./ppo_root.ts";

/** Refuses combinations the distributed backend cannot run, naming the key. */
export function checkDistributed(cfg: PpoConfig): void {
  const d = cfg.distributed, rollout = cfg.actor_rollout_ref.rollout;
  const rc = cfg.algorithm.rollout_correction;
  if (rc.rollout_is !== null && d.backend === "none" && !rollout.calculate_log_probs) {
    throw new ConfigError(
      "algorithm.rollout_correction.rollout_is",
      `algorithm.rollout_correction.rollout_is=${rc.rollout_is} weighs by the rollout's ` +
        "log-probs: set actor_rollout_ref.rollout.calculate_log_probs=true",
    );
  }
  if (d.backend === "none") return;
  if (rollout.multi_turn.enable) {
    throw new ConfigError(
      "distributed.backend",
      "distributed.backend=nats runs single-turn rollouts on the workers; multi_turn.enable=true " +
        "is not supported with it (use distributed.backend=none)",
    );
  }
  const model = cfg.actor_rollout_ref.model;
  if (model.lora_rank > 0 || model.lora_adapter_path !== null) {
    throw new ConfigError(
      "distributed.backend",
      "distributed.backend=nats publishes full weights to the workers; a LoRA actor " +
        "(actor_rollout_ref.model.lora_rank > 0 or lora_adapter_path) is not supported with it " +
        "yet (use distributed.backend=none, or merge the adapters and train the full model)",
    );
  }
  if (cfg.algorithm.filter_groups.enable && d.max_staleness > 0) {
    throw new ConfigError(
      "distributed.max_staleness",
      "algorithm.filter_groups.enable=true draws extra generation batches within a step; it " +
        "needs distributed.max_staleness=0",
    );
  }
  const auth = [d.token, d.nkey_seed, d.creds_file].filter((x) => x !== null).length;
  if (auth > 1) {
    throw new ConfigError(
      "distributed.token",
      "set one of distributed.token, distributed.nkey_seed and distributed.creds_file",
    );
  }
}
