/**
 * What the page's form chooses, shared by the page and the trainer worker (plain data, no GPU):
 * the run settings, their defaults, and which form field each verl config key is edited in, so a
 * `ConfigError` naming a key is shown next to the field that set it.
 */

/** Operators of the built-in arithmetic task. */
export type TaskOperator = "+" | "-" | "*";

/** The difficulty knobs of the built-in task. */
export interface ArithmeticTask {
  /** Digits per operand (1 = 0..9). */
  digits: number;
  /** Operands per expression (2 = `a+b`). */
  operands: number;
  operators: TaskOperator[];
}

/** Built-in scorers the page offers; `auto` dispatches on each row's data_source as verl does. */
export const BUILTIN_REWARDS = ["auto", "arithmetic", "gsm8k", "math", "exact_match"] as const;
export type BuiltinReward = typeof BUILTIN_REWARDS[number];

export type RewardChoice =
  | { kind: "builtin"; name: BuiltinReward }
  /** verl's `compute_score(dataSource, solutionStr, groundTruth, extraInfo)` in JavaScript. */
  | { kind: "custom"; code: string; timeoutS: number };

/** The built-in tasks the page offers: arithmetic, or the calculator tool task (multi-turn). */
export const TASK_NAMES = ["arithmetic", "calc_tool"] as const;
export type TaskName = typeof TASK_NAMES[number];

export interface RunSettings {
  /**
   * Which built-in task (and starting model) a run uses unless a prompts file was loaded; runs
   * saved before the picker existed have none (arithmetic).
   */
  taskName?: TaskName;
  /** The arithmetic task's knobs. */
  task: ArithmeticTask;
  /** `grpo` (group baseline, no critic) or `gae` (PPO with a critic). */
  algorithm: "grpo" | "gae";
  lr: number;
  /**
   * LoRA rank of the actor (and critic): 0 trains every weight; above 0 only rank-r adapters on
   * every linear layer train, over a frozen base (model.lora_rank, target_modules all-linear).
   */
  loraRank: number;
  /** Samples per prompt (rollout.n). */
  n: number;
  temperature: number;
  steps: number;
  promptsPerStep: number;
  maxResponseLength: number;
  /** Validate every this many steps (and after the last). */
  testFreq: number;
  /** Keep a checkpoint in the browser's storage every this many steps (and at the end). */
  saveFreq: number;
  /** actor.use_kl_loss: a KL penalty to the frozen starting model in the loss. */
  useKlLoss: boolean;
  klLossCoef: number;
  /** Held-out prompts per validation. */
  valPrompts: number;
  seed: number;
  reward: RewardChoice;
}

/** The embedded default of `deno task train` (configs/arithmetic_grpo.yaml), sized for a tab. */
export const DEFAULT_SETTINGS: RunSettings = {
  task: { digits: 1, operands: 4, operators: ["+", "-"] },
  algorithm: "grpo",
  lr: 5e-5,
  loraRank: 0,
  n: 8,
  temperature: 1,
  steps: 80,
  promptsPerStep: 16,
  maxResponseLength: 10,
  testFreq: 20,
  saveFreq: 10,
  useKlLoss: false,
  klLossCoef: 0.001,
  valPrompts: 64,
  seed: 1,
  reward: { kind: "builtin", name: "arithmetic" },
};

/**
 * The calculator task's run: configs/tasks/calc_tool.yaml (the same algorithm, schedule, sampling
 * and response budget) on the built-in calculator model; the reward dispatches on data_source as
 * the CLI's does (synthetic/calc_tool: the `#### n` rule).
 */
export const CALC_TOOL_SETTINGS: RunSettings = {
  ...DEFAULT_SETTINGS,
  taskName: "calc_tool",
  lr: 1e-3,
  n: 8,
  temperature: 1,
  steps: 40,
  promptsPerStep: 16,
  maxResponseLength: 32,
  testFreq: 10,
  valPrompts: 100,
  reward: { kind: "builtin", name: "auto" },
};

/** The default settings of a built-in task. */
export function taskDefaults(name: TaskName | undefined): RunSettings {
  return name === "calc_tool" ? CALC_TOOL_SETTINGS : DEFAULT_SETTINGS;
}

/** The starting text of the reward editor: verl's signature, scoring like the built-in task. */
export const REWARD_TEMPLATE = `// verl's signature; return a number, or {score, ...extra}.
// Runs in a sandboxed worker: no network, no storage; a throw or a timeout is counted.
function compute_score(dataSource, solutionStr, groundTruth, extraInfo) {
  const m = solutionStr.match(/####\\s*(-?[\\d.,]+)/g);
  if (!m) return 0;
  const answer = m[m.length - 1].replace(/[#\\s,]/g, "");
  return answer === String(groundTruth) ? 1 : 0;
}
`;

/** A problem with one form field, shown next to it. */
export interface FieldError {
  /** The form field's name, or "" when no field sets the key. */
  field: string;
  /** The config key (or input) at fault, e.g. `actor_rollout_ref.rollout.n`. */
  key: string;
  message: string;
}

/** Config keys (exact, or a prefix ending in ".") and the form field that sets them. */
const KEY_FIELDS: [string, string][] = [
  ["actor_rollout_ref.rollout.n", "n"],
  ["actor_rollout_ref.actor.optim.lr", "lr"],
  ["critic.optim.lr", "lr"],
  ["actor_rollout_ref.model.lora_rank", "loraRank"],
  ["actor_rollout_ref.model.lora_alpha", "loraRank"],
  ["critic.model.lora_rank", "loraRank"],
  ["critic.model.lora_alpha", "loraRank"],
  ["actor_rollout_ref.rollout.temperature", "temperature"],
  ["data.train_batch_size", "prompts"],
  ["actor_rollout_ref.actor.ppo_mini_batch_size", "prompts"],
  ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "prompts"],
  ["actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", "prompts"],
  ["trainer.total_training_steps", "steps"],
  ["trainer.test_freq", "testFreq"],
  ["trainer.save_freq", "saveFreq"],
  ["data.max_response_length", "maxResponseLength"],
  ["data.max_prompt_length", "dataFile"],
  ["data.train_files", "dataFile"],
  ["actor_rollout_ref.actor.kl_loss_coef", "klLossCoef"],
  ["actor_rollout_ref.actor.use_kl_loss", "useKlLoss"],
  ["algorithm.adv_estimator", "algorithm"],
  ["custom_reward_function.timeout_s", "rewardTimeout"],
  ["custom_reward_function.", "rewardCode"],
  ["task.operators", "op"],
  ["task.calc_tool", "taskName"],
  ["task.", "operands"],
];

/** The form field that edits `key`, or "" when none does. */
export function fieldOfKey(key: string): string {
  for (const [k, field] of KEY_FIELDS) {
    if (k.endsWith(".") ? key.startsWith(k) : key === k) return field;
  }
  return "";
}
