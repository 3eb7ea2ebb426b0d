/**
 * The page's settings as a verl config: dotted overrides over the schema's defaults, checked by the
 * same `loadConfig` the CLI uses. Its `ConfigError` names the key at fault, which `fieldOfKey` maps
 * back to the form field that set it.
 */
import { ConfigError, loadConfig, type PpoConfig } from "../src/config/mod.ts";
import { type FieldError, fieldOfKey, type RunSettings } from "./settings.ts";

/**
 * What configs/tasks/calc_tool.yaml sets beyond the form's fields: every row runs the agent loop
 * (hermes calls, at most 3 assistant turns), greedy validation. Its tool YAML is not read: the
 * worker passes the same calculator tool in code.
 */
const CALC_TOOL_OVERRIDES = [
  "actor_rollout_ref.rollout.multi_turn.enable=true",
  "actor_rollout_ref.rollout.multi_turn.format=hermes",
  "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=3",
  "actor_rollout_ref.rollout.val_kwargs.do_sample=false",
  "actor_rollout_ref.rollout.val_kwargs.n=1",
  "actor_rollout_ref.actor.ppo_epochs=1",
  "actor_rollout_ref.actor.entropy_coeff=0",
  "actor_rollout_ref.actor.grad_clip=1.0",
  "algorithm.use_kl_in_reward=false",
];

/** The verl config of a run. Throws ConfigError naming the first bad key. */
export function runConfig(s: RunSettings, options: { maxPromptLength: number }): PpoConfig {
  const batch = s.promptsPerStep * s.n;
  const timeout = s.reward.kind === "custom" ? s.reward.timeoutS : null;
  return loadConfig("ppo_trainer", {
    skipPathChecks: true,
    overrides: [
      `data.train_batch_size=${s.promptsPerStep}`,
      `data.max_prompt_length=${options.maxPromptLength}`,
      `data.max_response_length=${s.maxResponseLength}`,
      `data.seed=${s.seed}`,
      `actor_rollout_ref.rollout.n=${s.n}`,
      `actor_rollout_ref.rollout.temperature=${s.temperature}`,
      `actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=${batch}`,
      `actor_rollout_ref.actor.optim.lr=${s.lr}`,
      // LoRA's alpha follows the rank (scale 2, the usual alpha = 2r), on the critic too.
      `actor_rollout_ref.model.lora_rank=${s.loraRank}`,
      `actor_rollout_ref.model.lora_alpha=${2 * s.loraRank || 16}`,
      `critic.model.lora_rank=${s.loraRank}`,
      `critic.model.lora_alpha=${2 * s.loraRank || 16}`,
      `actor_rollout_ref.actor.ppo_mini_batch_size=${s.promptsPerStep}`,
      `actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=${batch}`,
      `actor_rollout_ref.actor.use_kl_loss=${s.useKlLoss}`,
      `actor_rollout_ref.actor.kl_loss_coef=${s.klLossCoef}`,
      `critic.optim.lr=${s.lr * 3}`,
      `critic.enable=${s.algorithm === "gae"}`,
      `algorithm.adv_estimator=${s.algorithm}`,
      ...(timeout === null ? [] : [`custom_reward_function.timeout_s=${timeout}`]),
      `trainer.total_training_steps=${s.steps}`,
      `trainer.test_freq=${s.testFreq}`,
      `trainer.save_freq=${s.saveFreq}`,
      `trainer.val_before_train=true`,
      `trainer.logger=[]`,
      `trainer.seed=${s.seed}`,
      ...(s.taskName === "calc_tool" ? CALC_TOOL_OVERRIDES : []),
    ],
  });
}

/** Fields the page sends as numbers: NaN means the input was empty or not a number. */
const NUMERIC: [keyof RunSettings, string][] = [
  ["lr", "lr"],
  ["loraRank", "loraRank"],
  ["n", "n"],
  ["temperature", "temperature"],
  ["steps", "steps"],
  ["promptsPerStep", "prompts"],
  ["maxResponseLength", "maxResponseLength"],
  ["testFreq", "testFreq"],
  ["saveFreq", "saveFreq"],
  ["klLossCoef", "klLossCoef"],
];

/** A thrown error as a field error: ConfigError by its key, anything else by `fallback`. */
export function fieldError(e: unknown, fallback: string): FieldError {
  if (e instanceof ConfigError) {
    return { field: fieldOfKey(e.key) || fallback, key: e.key, message: e.message };
  }
  return { field: fallback, key: fallback, message: e instanceof Error ? e.message : String(e) };
}

/**
 * Every problem of the settings that can be known before any data or model is read: empty
 * inputs, then the shared config validation (one error: loadConfig stops at the first).
 */
export function checkSettings(s: RunSettings): FieldError[] {
  const errors: FieldError[] = [];
  for (const [key, field] of NUMERIC) {
    if (!Number.isFinite(s[key] as number)) {
      errors.push({ field, key: field, message: "enter a number" });
    }
  }
  if (s.reward.kind === "custom" && !Number.isFinite(s.reward.timeoutS)) {
    errors.push({ field: "rewardTimeout", key: "rewardTimeout", message: "enter a number" });
  }
  if ((s.taskName ?? "arithmetic") === "arithmetic" && s.task.operators.length === 0) {
    errors.push({ field: "op", key: "task.operators", message: "pick at least one operator" });
  }
  if (errors.length > 0) return errors;
  try {
    runConfig(s, { maxPromptLength: 16 });
  } catch (e) {
    errors.push(fieldError(e, ""));
  }
  return errors;
}
