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

const RC = "algorithm.rollout_correction";

/**
 * `rollout_correction.bypass_mode` and `loss_type`. verl replaces any policy_loss.loss_mode by its
 * bypass loss; here a loss_mode other than vanilla is refused instead of overridden, and so is a
 * key bypass mode would leave without effect. `sumPiSquared`: whether the run reads Σπ², which
 * only the old_log_prob pass computes.
 */
export function checkBypass(cfg: PpoConfig, o: { sumPiSquared: boolean }): void {
  const rc = cfg.algorithm.rollout_correction, actor = cfg.actor_rollout_ref.actor;
  const mode = actor.policy_loss.loss_mode;
  if (mode === "reinforce") {
    throw new ConfigError(
      "actor_rollout_ref.actor.policy_loss.loss_mode",
      "actor_rollout_ref.actor.policy_loss.loss_mode=reinforce is bypass mode's loss: set " +
        `${RC}.bypass_mode=true and ${RC}.loss_type=reinforce instead`,
    );
  }
  if (!rc.bypass_mode) {
    if (rc.loss_type !== "ppo_clip") {
      throw new ConfigError(
        `${RC}.loss_type`,
        `${RC}.loss_type=${rc.loss_type} applies in bypass mode only: set ${RC}.bypass_mode=true ` +
          "or remove the key",
      );
    }
    return;
  }
  if (!cfg.actor_rollout_ref.rollout.calculate_log_probs) {
    throw new ConfigError(
      `${RC}.bypass_mode`,
      `${RC}.bypass_mode=true uses the rollout's log-probs as the old log-probs: set ` +
        "actor_rollout_ref.rollout.calculate_log_probs=true",
    );
  }
  if (mode !== "vanilla") {
    throw new ConfigError(
      "actor_rollout_ref.actor.policy_loss.loss_mode",
      `${RC}.bypass_mode=true trains with ${RC}.loss_type (ppo_clip or reinforce); ` +
        `actor_rollout_ref.actor.policy_loss.loss_mode=${mode} cannot be honoured with it ` +
        "(remove it, or set bypass_mode=false)",
    );
  }
  if (rc.loss_type === "ppo_clip" && rc.rollout_is !== null) {
    throw new ConfigError(
      `${RC}.rollout_is`,
      `${RC}.rollout_is=${rc.rollout_is} with bypass_mode and loss_type=ppo_clip: the PPO ratio ` +
        "pi / pi_rollout already is the importance weight, so no IS weights apply; set " +
        "rollout_is=null, or loss_type=reinforce to weigh by them",
    );
  }
  const est = cfg.algorithm.adv_estimator;
  if (o.sumPiSquared) {
    throw new ConfigError(
      `${RC}.bypass_mode`,
      `${RC}.bypass_mode=true skips the old_log_prob pass that computes sum_pi_squared, which ` +
        `algorithm.adv_estimator=${est} reads: choose another estimator or bypass_mode=false`,
    );
  }
}
