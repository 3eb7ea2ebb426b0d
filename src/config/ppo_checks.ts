/** Cross-key rules of the PPO/GRPO config, each naming the keys at fault. */
import { ConfigError } from "./errors.ts";
import { checkCustomReward } from "./custom_reward.ts";
import { checkDapo } from "./ppo_dapo_checks.ts";
import { checkBypass, checkDistributed } from "./ppo_distributed_checks.ts";
import { ADV_ESTIMATORS } from "../algos/mod.ts";
import { type PpoConfig, ppoRoot } from "./ppo_root.ts";
import { checkPolicyLoss } from "./ppo_actor.ts";
import { checkStrategy } from "./common.ts";
import { applyLegacyMicroBatches } from "./legacy_micro.ts";
import { checkRolloutMtp, normalizeVerlAliases } from "./ppo_verl_aliases.ts";

/** Whether the critic runs: explicit critic.enable, else exactly when the estimator needs values. */
export function criticEnabled(cfg: PpoConfig): boolean {
  return cfg.critic.enable ?? ADV_ESTIMATORS.get(cfg.algorithm.adv_estimator).critic === true;
}

/** Whether old_log_prob also computes Σπ²: explicit calculate_sum_pi_squared, else by estimator. */
export function sumPiSquaredEnabled(cfg: PpoConfig): boolean {
  return cfg.actor_rollout_ref.actor.calculate_sum_pi_squared ??
    ADV_ESTIMATORS.get(cfg.algorithm.adv_estimator).sumPiSquared === true;
}

/** Copies deprecated aliases onto their successors so consumers read one key. */
export function normalizePpo(cfg: PpoConfig): void {
  applyLegacyMicroBatches(cfg, ppoRoot);
  normalizeVerlAliases(cfg);
  for (const optim of [cfg.actor_rollout_ref.actor.optim, cfg.critic.optim]) {
    if (optim.warmup_style !== null) optim.lr_scheduler_type = optim.warmup_style;
  }
}

export function checkPpo(cfg: PpoConfig): void {
  const { actor, rollout } = cfg.actor_rollout_ref;
  if (cfg.algorithm.use_kl_in_reward && actor.use_kl_loss) {
    throw new ConfigError(
      "algorithm.use_kl_in_reward",
      "algorithm.use_kl_in_reward=true and actor_rollout_ref.actor.use_kl_loss=true both " +
        "apply a KL penalty; choose one (GRPO usually uses use_kl_loss).",
    );
  }
  const n = rollout.n;
  checkBatches(cfg.data.train_batch_size, n, {
    mini: actor.ppo_mini_batch_size,
    micro: actor.ppo_micro_batch_size_per_gpu,
    prefix: "actor_rollout_ref.actor",
  });
  if (criticEnabled(cfg)) {
    checkBatches(cfg.data.train_batch_size, n, {
      mini: cfg.critic.ppo_mini_batch_size,
      micro: cfg.critic.ppo_micro_batch_size_per_gpu,
      prefix: "critic",
    });
  }
  checkPolicyLoss(actor);
  checkStrategy("actor_rollout_ref.actor.strategy", actor.strategy);
  checkStrategy("critic.strategy", cfg.critic.strategy);
  if (actor.clip_ratio_c <= 1) {
    throw new ConfigError(
      "actor_rollout_ref.actor.clip_ratio_c",
      `actor_rollout_ref.actor.clip_ratio_c must be > 1 (dual-clip bound), got ${actor.clip_ratio_c}`,
    );
  }
  const estimator = ADV_ESTIMATORS.get(cfg.algorithm.adv_estimator);
  if (estimator.groups && n < 2) {
    throw new ConfigError(
      "actor_rollout_ref.rollout.n",
      `algorithm.adv_estimator=${cfg.algorithm.adv_estimator} compares responses to the same ` +
        `prompt: set actor_rollout_ref.rollout.n to 2 or more (got ${n})`,
    );
  }
  if (estimator.critic && cfg.critic.enable === false) {
    throw new ConfigError(
      "critic.enable",
      `algorithm.adv_estimator=${cfg.algorithm.adv_estimator} needs a critic's values: ` +
        "remove critic.enable=false or choose a critic-free estimator such as grpo",
    );
  }
  checkSumPiSquared(cfg);
  checkNullMicroBatches(cfg);
  checkTokenBudgets(cfg);
  checkDapo(cfg);
  checkDistributed(cfg);
  checkBypass(cfg, { sumPiSquared: sumPiSquaredEnabled(cfg) });
  // rollout.temperature=0 and val_kwargs.temperature=0 decode greedily (as vLLM does).
  checkCustomReward(cfg.custom_reward_function);
  checkRolloutMtp(cfg);
  for (const key of ["save_freq", "test_freq"] as const) {
    if (cfg.trainer[key] === 0) {
      // verl only acts on a positive frequency; 0 would silently never save (or validate).
      throw new ConfigError(
        `trainer.${key}`,
        `trainer.${key}=0 would never ${key === "save_freq" ? "save" : "validate"}: use ` +
          `trainer.${key}=-1 for never, or a number of steps >= 1`,
      );
    }
  }
  if (cfg.trainer.resume_mode === "resume_path" && cfg.trainer.resume_from_path === null) {
    throw new ConfigError(
      "trainer.resume_from_path",
      "trainer.resume_mode=resume_path needs trainer.resume_from_path",
    );
  }
}

/** One micro-batched pass of a PPO step: its size key, its use_dynamic_bsz key and its budget. */
interface MicroPass {
  size: [key: string, value: number | null];
  dynamic: [key: string, value: boolean];
  budget: [key: string, value: number];
}

/** The passes that run in micro-batches (the critic's only when it is enabled), verl's keys. */
function microPasses(cfg: PpoConfig): MicroPass[] {
  const { actor, rollout, ref } = cfg.actor_rollout_ref, c = cfg.critic;
  const AR = "actor_rollout_ref";
  const logProb = (at: string, s: typeof rollout | typeof ref): MicroPass => ({
    size: [`${at}.log_prob_micro_batch_size_per_gpu`, s.log_prob_micro_batch_size_per_gpu],
    dynamic: [`${at}.log_prob_use_dynamic_bsz`, s.log_prob_use_dynamic_bsz],
    budget: [`${at}.log_prob_max_token_len_per_gpu`, s.log_prob_max_token_len_per_gpu],
  });
  const passes: MicroPass[] = [
    {
      size: [`${AR}.actor.ppo_micro_batch_size_per_gpu`, actor.ppo_micro_batch_size_per_gpu],
      dynamic: [`${AR}.actor.use_dynamic_bsz`, actor.use_dynamic_bsz],
      budget: [`${AR}.actor.ppo_max_token_len_per_gpu`, actor.ppo_max_token_len_per_gpu],
    },
    logProb(`${AR}.rollout`, rollout),
    logProb(`${AR}.ref`, ref),
  ];
  if (criticEnabled(cfg)) {
    const dynamic: MicroPass["dynamic"] = ["critic.use_dynamic_bsz", c.use_dynamic_bsz];
    passes.push({
      size: ["critic.ppo_micro_batch_size_per_gpu", c.ppo_micro_batch_size_per_gpu],
      dynamic,
      budget: ["critic.ppo_max_token_len_per_gpu", c.ppo_max_token_len_per_gpu],
    }, {
      size: ["critic.forward_micro_batch_size_per_gpu", c.forward_micro_batch_size_per_gpu],
      dynamic,
      budget: ["critic.forward_max_token_len_per_gpu", c.forward_max_token_len_per_gpu],
    });
  }
  return passes;
}

/**
 * A null micro-batch size (verl's default) leaves the pass to its token budget, so it needs that
 * pass's use_dynamic_bsz, as verl requires.
 */
function checkNullMicroBatches(cfg: PpoConfig): void {
  for (const { size: [key, size], dynamic: [flag, on] } of microPasses(cfg)) {
    if (size !== null || on) continue;
    throw new ConfigError(
      key,
      `${key}=null leaves the micro-batches to a token budget, which needs ${flag}=True (as in ` +
        `verl): set ${key} to a number of samples, or turn ${flag} on`,
    );
  }
}

/**
 * use_dynamic_bsz: each token budget holds at least one whole padded sequence (verl asserts the
 * same: max_token_len >= max_prompt_length + max_response_length).
 */
function checkTokenBudgets(cfg: PpoConfig): void {
  const T = cfg.data.max_prompt_length + cfg.data.max_response_length;
  for (const { dynamic: [, on], budget: [key, tokens] } of microPasses(cfg)) {
    if (on && tokens < T) {
      throw new ConfigError(
        key,
        `${key}=${tokens} is below data.max_prompt_length + data.max_response_length = ${T}: ` +
          `a token budget must hold one whole sequence; raise it to at least ${T}`,
      );
    }
  }
}

function checkSumPiSquared(cfg: PpoConfig): void {
  const name = cfg.algorithm.adv_estimator,
    key = "actor_rollout_ref.actor.calculate_sum_pi_squared";
  const set = cfg.actor_rollout_ref.actor.calculate_sum_pi_squared;
  const needs = ADV_ESTIMATORS.get(name).sumPiSquared === true;
  if (needs && set === false) {
    throw new ConfigError(
      key,
      `algorithm.adv_estimator=${name} weighs tokens by sum_pi_squared: remove ${key}=false ` +
        "(or set it to true)",
    );
  }
  if (!needs && set === true) {
    const readers = ADV_ESTIMATORS.names().filter((n) => ADV_ESTIMATORS.get(n).sumPiSquared);
    throw new ConfigError(
      key,
      `${key}=true: nothing reads sum_pi_squared with algorithm.adv_estimator=${name} (only ` +
        `${readers.join(", ")} do); remove the key`,
    );
  }
}

/**
 * verl counts ppo_mini_batch_size in prompts and multiplies it by rollout.n; the micro-batch
 * counts samples. So a step's train_batch_size*n samples split into mini*n-sample mini-batches,
 * each split into micro-batches.
 */
function checkBatches(
  train: number,
  n: number,
  o: { mini: number; micro: number | null; prefix: string },
): void {
  const miniKey = `${o.prefix}.ppo_mini_batch_size`;
  const microKey = `${o.prefix}.ppo_micro_batch_size_per_gpu`;
  if (o.mini > train) {
    throw new ConfigError(
      miniKey,
      `${miniKey}=${o.mini} is larger than data.train_batch_size=${train}`,
    );
  }
  if ((train * n) % (o.mini * n) !== 0) {
    throw new ConfigError(
      miniKey,
      `data.train_batch_size * rollout.n = ${train} * ${n} = ${train * n} is not divisible by ` +
        `${miniKey} * rollout.n = ${o.mini} * ${n} = ${o.mini * n}`,
    );
  }
  const miniSamples = o.mini * n;
  if (o.micro === null) return; // token budgets (checkNullMicroBatches)
  if (o.micro > miniSamples) {
    throw new ConfigError(
      microKey,
      `${microKey}=${o.micro} is larger than the mini-batch (${miniKey} * rollout.n = ` +
        `${miniSamples} samples)`,
    );
  }
  if (miniSamples % o.micro !== 0) {
    throw new ConfigError(
      microKey,
      `the mini-batch (${miniKey} * rollout.n = ${miniSamples} samples) is not divisible by ` +
        `${microKey}=${o.micro}`,
    );
  }
}
