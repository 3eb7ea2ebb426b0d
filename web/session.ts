/**
 * One training run in the trainer worker: the page's settings become a verl config (checked by the
 * shared loadConfig), the project's `buildTrainerParts` builds the same parts Deno uses, and
 * `fit()` runs them. Pause and stop act between steps through the controller's `shouldContinue`
 * hook; a stopped run validates the step it stopped at and keeps a checkpoint, as a finished one
 * does. `prepare()` refuses bad settings, data or reward code with field errors before any work.
 */
import { checkContextLength, ConfigError, type PpoConfig } from "../src/config/mod.ts";
import { gpu } from "../src/gpu/mod.ts";
import type { RewardManager } from "../src/reward/mod.ts";
import type { AgentTool } from "../src/rollout/mod.ts";
import {
  buildTrainerParts,
  fit,
  loraFromCheckpoint,
  type LoraKeys,
  loraStart,
  type TrainerParts,
  validate,
} from "../src/trainer/mod.ts";
import { mergeLoraRef } from "../src/nn/mod.ts";
import { OpfsCheckpoints } from "./checkpoints.ts";
import { folderTokenizer, type ModelFolder } from "./model_files.ts";
import type { Checkpoint, RunStore } from "./opfs.ts";
import type { MetricPoint, RunEnd, SampleRow } from "./protocol.ts";
import { rewardManager } from "./reward.ts";
import { fieldError, runConfig } from "./run_config.ts";
import type { FieldError, RunSettings } from "./settings.ts";
import { promptItems, type PromptRows } from "./task.ts";

export interface RunEvents {
  metrics(point: MetricPoint): void;
  samples(kind: "train" | "val", step: number, rows: SampleRow[]): void;
  print(line: string): void;
  /** The run waits before step `step + 1` (pause took effect), or goes on. */
  paused(step: number): void;
  running(step: number): void;
}

export interface RunInputs {
  settings: RunSettings;
  /** The starting model (also the reference policy). */
  base: ModelFolder;
  rows: PromptRows;
  /** Where checkpoints go (null: none are kept). */
  store: RunStore | null;
  /** A checkpoint to continue from. */
  resume?: Checkpoint;
  sandboxUrl: URL;
  /** The agent loop's tools (the calculator task's calculator); none for single-turn runs. */
  tools?: AgentTool[];
  /** Fails the run when step `failAtStep` is about to start (the page test's mid-run failure). */
  failAtStep?: number;
}

/** Settings, data or reward code the run cannot use; each names its form field. */
export class Refusal extends Error {
  constructor(readonly errors: FieldError[]) {
    super(errors.map((e) => e.message).join("; "));
    this.name = "Refusal";
  }
}

export class TrainingRun {
  config!: PpoConfig;
  /** Metrics logged so far (a resumed run starts with the checkpoint's). */
  readonly history: MetricPoint[];
  #parts: TrainerParts | null = null;
  #reward: RewardManager | null = null;
  #checkpoints: OpfsCheckpoints | null = null;
  #paused = false;
  #stopped = false;
  #wake: (() => void) | null = null;
  #step = 0;

  constructor(readonly inputs: RunInputs, readonly events: RunEvents) {
    this.history = inputs.resume ? [...inputs.resume.metrics] : [];
    this.#step = inputs.resume?.step ?? 0;
  }

  get step(): number {
    return this.#step;
  }

  /** Checks everything and builds the parts; throws Refusal when something cannot be used. */
  async prepare(): Promise<void> {
    const { settings: s, base } = this.inputs;
    const at = (field: string) => (e: unknown) => new Refusal([fieldError(e, field)]);
    const tokenizer = folderTokenizer(base);
    let items;
    try {
      items = promptItems(this.inputs.rows, tokenizer);
    } catch (e) {
      throw at("dataFile")(e);
    }
    const longest = Math.max(...[...items.train, ...items.val].map((it) => it.inputIds.length));
    try {
      this.config = runConfig(s, { maxPromptLength: longest });
      checkContextLength({
        maxPromptLength: longest,
        maxResponseLength: s.maxResponseLength,
        maxPositionEmbeddings: base.config.maxPositionEmbeddings,
        model: `${base.source}/config.json`,
        promptLabel: `the longest prompt (${longest} tokens)`,
      });
      if (items.train.length < s.promptsPerStep) {
        throw new ConfigError(
          "data.train_batch_size",
          `${s.promptsPerStep} prompts per step, but ${this.inputs.rows.source} has only ` +
            `${items.train.length} training prompts: lower it to ${items.train.length} or less`,
        );
      }
    } catch (e) {
      throw at("")(e);
    }
    const print = (line: string) => this.events.print(line);
    try {
      this.#reward = await rewardManager(s.reward, {
        tokenizer,
        print,
        sandboxUrl: this.inputs.sandboxUrl,
      });
    } catch (e) {
      throw at("rewardCode")(e);
    }
    print(
      `${items.train.length} training and ${items.val.length} held-out prompts from ` +
        `${this.inputs.rows.source}; model ${base.source}`,
    );
    const resume = this.inputs.resume;
    // A LoRA checkpoint holds the adapters only; the base is the starting model's.
    const cfg = this.config;
    const fresh = (keys: LoraKeys, section: string, critic: boolean) =>
      loraStart(keys, {
        config: base.config,
        section,
        seed: cfg.trainer.seed + (critic ? 1 : 0),
        taskType: critic ? "TOKEN_CLS" : "CAUSAL_LM",
      });
    const actorLora = resume?.actor
      ? loraFromCheckpoint(
        resume.actor,
        fresh(cfg.actor_rollout_ref.model, "actor_rollout_ref.model", false),
      )
      : null;
    const criticLora = resume?.critic
      ? loraFromCheckpoint(resume.critic, fresh(cfg.critic.model, "critic.model", true))
      : null;
    this.#checkpoints = this.inputs.store
      ? new OpfsCheckpoints(this.inputs.store, { history: this.history, resume })
      : null;
    this.#parts = buildTrainerParts({
      config: this.config,
      tokenizer,
      actor: {
        config: base.config,
        tensors: actorLora ? base.tensors : resume?.actor ?? base.tensors,
      },
      reference: { config: base.config, tensors: base.tensors },
      critic: resume?.critic
        ? { config: base.config, tensors: criticLora ? base.tensors : resume.critic }
        : null,
      ...(actorLora ? { actorLora } : {}),
      ...(criticLora ? { criticLora } : {}),
      trainItems: items.train,
      valItems: items.val,
      reward: this.#reward,
      tools: this.inputs.tools,
      tracking: { log: (step, metrics) => this.#log(step, metrics), close: () => {} },
      checkpoints: this.#checkpoints,
      print,
      onGenerations: (kind, step, rows) =>
        this.events.samples(kind, step, rows.slice(0, kind === "train" ? 8 : 6)),
      shouldContinue: () => this.#gate(),
      peakMemoryBytes: () => gpu().pool.peakBytes,
    });
    this.#checkpoints?.attach(this.#parts);
  }

  #log(step: number, metrics: Record<string, number>): void {
    const last = this.history.at(-1);
    // A second record of a step (the save's timing) joins the step's first one.
    if (last && last.step === step) Object.assign(last.metrics, metrics);
    else this.history.push({ step, metrics: { ...metrics } });
    this.#step = Math.max(this.#step, step);
    this.events.metrics({ step, metrics });
  }

  /** Trains to the end or until stopped; a stopped run is validated and checkpointed. */
  async run(): Promise<{ how: RunEnd; step: number; checkpointed: boolean }> {
    const parts = this.#parts!;
    const result = await fit(parts);
    const total = this.config.trainer.total_training_steps!;
    const step = result.globalStep;
    if (step >= total) {
      return { how: "finished", step, checkpointed: this.#checkpoints?.savedStep === step };
    }
    const validated = this.history.some((p) =>
      p.step === step && Object.keys(p.metrics).some((k) => k.startsWith("val-core/"))
    );
    if (!validated) this.#log(step, await validate(parts, step));
    if (this.#checkpoints && this.#checkpoints.savedStep !== step) {
      await this.#checkpoints.save(step, {
        global_step: step,
        data_loader: parts.trainLoader.state(),
        kl_ctrl: parts.klCtrl?.state() ?? null,
      });
    }
    return { how: "stopped", step, checkpointed: this.#checkpoints?.savedStep === step };
  }

  /** Resolves true to run the next step, false once stopped; waits while paused. */
  async #gate(): Promise<boolean> {
    if (this.#paused && !this.#stopped) {
      this.events.paused(this.#step);
      while (this.#paused && !this.#stopped) {
        await new Promise<void>((resolve) => (this.#wake = resolve));
      }
      if (!this.#stopped) this.events.running(this.#step);
    }
    if (this.inputs.failAtStep === this.#step + 1 && !this.#stopped) {
      throw new Error(`step ${this.#step + 1} failed (fail_at_step=${this.inputs.failAtStep})`);
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

  /** The actor's current weights (one GPU round trip); a LoRA actor's merged into its base. */
  async trainedWeights(): Promise<Map<string, Float32Array>> {
    const base = this.inputs.base;
    if (!this.#parts) {
      const saved = this.inputs.resume?.actor;
      if (!saved) return base.tensors;
      const m = this.config.actor_rollout_ref.model;
      const lora = loraFromCheckpoint(
        saved,
        loraStart(m, { config: base.config, section: "actor_rollout_ref.model" }),
      );
      return lora ? mergeLoraRef(base.config, base.tensors, lora.arrays, lora.settings) : saved;
    }
    const model = this.#parts.actor.model;
    const lora = model.lora;
    if (lora) return mergeLoraRef(base.config, base.tensors, await lora.toArrays(), lora.settings);
    return await model.toArrays();
  }

  /** Frees the run's GPU buffers and its reward sandbox. */
  dispose(): void {
    this.#reward?.close();
    const p = this.#parts;
    this.#parts = null;
    if (!p) return;
    const free = (x: unknown) => (x as { dispose?: () => void } | null)?.dispose?.();
    free(p.actor.model);
    free(p.ref);
    free(p.actor.optimizer.adamw);
    free(p.critic?.optimizer.adamw);
    gpu().pool.trim();
  }
}
