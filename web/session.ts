/**
 * One training run in the tab: the page's settings become config overrides, the project's
 * `buildTrainerParts` builds the same parts Deno uses, and `fit()` runs them. Pause and stop act
 * between steps through the controller's `shouldContinue` hook.
 */
import type { Operator } from "../src/data/mod.ts";
import { loadConfig, type PpoConfig } from "../src/config/mod.ts";
import { buildTrainerParts } from "../src/trainer/mod.ts";
import type { GenerationRow, TrainerParts } from "../src/trainer/mod.ts";
import { fit, type FitResult } from "../src/trainer/mod.ts";
import { gpu } from "../src/gpu/mod.ts";
import { RewardManager } from "../src/reward/mod.ts";
import { folderTokenizer, type ModelFolder } from "./model_files.ts";
import { arithmeticItems, type ArithmeticTask } from "./task.ts";

/** What the page's form chooses. */
export interface RunSettings {
  task: ArithmeticTask;
  /** `grpo` (group baseline, no critic) or `gae` (PPO with a critic). */
  algorithm: "grpo" | "gae";
  lr: number;
  /** Samples per prompt (rollout.n). */
  n: number;
  temperature: number;
  steps: number;
  promptsPerStep: number;
  maxResponseLength: number;
  /** Validate every this many steps (and after the last). */
  testFreq: number;
  /** Held-out prompts per validation. */
  valPrompts: number;
  seed: number;
}

/** The embedded default of `deno task train` (configs/arithmetic_grpo.yaml), sized for a tab. */
export const DEFAULT_SETTINGS: RunSettings = {
  task: { digits: 1, operands: 4, operators: ["+", "-"] as Operator[] },
  algorithm: "grpo",
  lr: 5e-5,
  n: 8,
  temperature: 1,
  steps: 80,
  promptsPerStep: 16,
  maxResponseLength: 10,
  testFreq: 20,
  valPrompts: 64,
  seed: 1,
};

export interface RunEvents {
  onMetrics(step: number, metrics: Record<string, number>): void;
  onGenerations(kind: "train" | "val", step: number, rows: GenerationRow[]): void;
  print(line: string): void;
}

/** The verl config of a run, as dotted overrides over the schema's defaults. */
export function runConfig(s: RunSettings, options: { maxPromptLength: number }): PpoConfig {
  const batch = s.promptsPerStep * s.n;
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
      `actor_rollout_ref.actor.ppo_mini_batch_size=${s.promptsPerStep}`,
      `actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=${batch}`,
      `critic.optim.lr=${s.lr * 3}`,
      `critic.enable=${s.algorithm === "gae"}`,
      `algorithm.adv_estimator=${s.algorithm}`,
      `trainer.total_training_steps=${s.steps}`,
      `trainer.test_freq=${s.testFreq}`,
      `trainer.save_freq=-1`,
      `trainer.val_before_train=true`,
      `trainer.logger=[]`,
      `trainer.seed=${s.seed}`,
    ],
  });
}

export class TrainingRun {
  readonly config: PpoConfig;
  #parts: TrainerParts | null = null;
  #paused = false;
  #stopped = false;
  #wake: (() => void) | null = null;

  constructor(
    readonly folder: ModelFolder,
    readonly settings: RunSettings,
    readonly events: RunEvents,
  ) {
    this.config = runConfig(settings, { maxPromptLength: 64 });
  }

  get paused(): boolean {
    return this.#paused;
  }

  /** Builds the parts and trains; resolves when the steps are done or the run is stopped. */
  async start(): Promise<FitResult> {
    const tokenizer = folderTokenizer(this.folder);
    const items = arithmeticItems(this.settings.task, {
      tokenizer,
      seed: this.settings.seed,
      maxVal: this.settings.valPrompts,
    });
    const longest = Math.max(...items.train.map((it) => it.inputIds.length));
    this.config.data.max_prompt_length = Math.max(
      longest,
      ...items.val.map((it) => it.inputIds.length),
    );
    const promptsPerStep = Math.min(this.settings.promptsPerStep, items.train.length);
    this.config.data.train_batch_size = promptsPerStep;
    this.config.actor_rollout_ref.actor.ppo_mini_batch_size = promptsPerStep;
    this.events.print(
      `${items.train.length} training and ${items.val.length} validation prompts; ` +
        `model from ${this.folder.source}`,
    );
    this.#parts = buildTrainerParts({
      config: this.config,
      tokenizer,
      actor: { config: this.folder.config, tensors: this.folder.tensors },
      trainItems: items.train,
      valItems: items.val,
      // build.ts's default manager has no tokenizer to decode responses with (see the report).
      reward: new RewardManager({ tokenizer, log: (line) => this.events.print(line) }),
      tracking: {
        log: (step, metrics) => this.events.onMetrics(step, metrics),
        close: () => {},
      },
      print: (line) => this.events.print(line),
      onGenerations: (kind, step, rows) => this.events.onGenerations(kind, step, rows),
      shouldContinue: () => this.#gate(),
      peakMemoryBytes: () => gpu().pool.peakBytes,
    });
    return await fit(this.#parts);
  }

  /** Resolves true to run the next step, false once stopped; waits while paused. */
  async #gate(): Promise<boolean> {
    while (this.#paused && !this.#stopped) {
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
    return !this.#stopped;
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    this.#wake?.();
  }

  stop(): void {
    this.#stopped = true;
    this.#wake?.();
  }

  /** The actor's current weights as a model folder (one GPU round trip). */
  async trainedFolder(): Promise<ModelFolder> {
    if (!this.#parts) return this.folder;
    const model = this.#parts.actor.model as unknown as {
      toArrays(): Promise<Map<string, Float32Array>>;
    };
    return { ...this.folder, source: "trained in this tab", tensors: await model.toArrays() };
  }
}
