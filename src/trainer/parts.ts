/** Everything `fit()` works with, built once from the config by `setup` (Deno or browser). */
import type { KlController } from "../algos/mod.ts";
import type { Tokenizer } from "../io/mod.ts";
import type { RewardManager } from "../reward/mod.ts";
import type { Logger, Tick } from "../tracking/mod.ts";
import type { PpoConfig } from "../config/mod.ts";
import type { CausalModel } from "./actor.ts";
import type { ValueModel } from "./critic.ts";
import type { Optimizer } from "./optimizer_step.ts";
import type { PromptItem } from "../data/mod.ts";
import type { AgentInteraction, AgentTool, TurnGenerator } from "../rollout/mod.ts";
import type { ChatMessage } from "../io/mod.ts";
import type { GenBatch, LogProbBatch } from "./batch.ts";
import type { MiniBatchAudit } from "./minibatch.ts";

/** Left-padded prompts `[B, P]` for the rollout. */
export interface RolloutPrompts {
  inputIds: Int32Array; // [B, P]
  attentionMask: Int32Array; // [B, P]
  batch: number;
  promptLength: number;
}

export interface RolloutOptions {
  n: number;
  responseLength: number;
  temperature: number;
  topK: number;
  topP: number;
  doSample: boolean;
  seed: number;
  /** Keep the sampler's log-probs of the chosen tokens (rollout.calculate_log_probs). */
  returnLogProbs?: boolean;
  /**
   * Hears progress for the console's bar: responses ended of all (the engine), or decode steps
   * done of responseLength (lock-step batches).
   */
  onProgress?: Tick;
}

export interface RolloutOutput {
  responses: Int32Array; // [B * n, R]
  responseMask: Int32Array; // [B * n, R]
  logProbs?: Float32Array; // [B * n, R]
}

export type RolloutFn = (
  prompts: RolloutPrompts,
  options: RolloutOptions,
) => Promise<RolloutOutput>;

/** Sampling of the agent loop's turns, and what sizes the engine's pool. */
export interface TurnRolloutOptions {
  temperature: number;
  topK: number;
  topP: number;
  doSample: boolean;
  seed: number;
  returnLogProbs?: boolean;
  /** Conversations in the batch. */
  conversations: number;
  /** Longest context a turn may reach: the longest prompt plus the response budget. */
  longest: number;
}

/**
 * Opens the rollout engine for a batch of agent conversations: `use` submits each turn as a
 * request of its own (TurnGenerator) and may read the engine's metrics so far (its prefix
 * cache's hit rate); the engine closes once `use` settles.
 */
export type TurnRolloutFn = <T>(
  options: TurnRolloutOptions,
  use: (turns: TurnGenerator, engineMetrics?: () => Record<string, number>) => Promise<T>,
) => Promise<T>;

/** The training prompts, epoch by epoch, with a position that checkpoints can restore. */
export interface PromptLoader {
  /** The next batch, or null at the end of the current epoch (the next call starts a new one). */
  next(): PromptItem[] | null;
  readonly epoch: number;
  readonly batchesPerEpoch: number;
  state(): unknown;
  restore(state: unknown): void;
}

/** Where checkpoints and resumes go; Deno writes folders, the browser may keep them in memory. */
export interface CheckpointStore {
  save(step: number, extra: Record<string, unknown>): Promise<void>;
  /** Loads the checkpoint chosen by `trainer.resume_mode`; returns its extra, or null. */
  resume(): Promise<Record<string, unknown> | null>;
}

/** What fit() asks of the distributed backend (implemented by RemoteRollout, remote.ts). */
export interface RemoteGen {
  /** The step's samples from the workers, with the transport's metrics. */
  gen(
    parts: TrainerParts,
    items: PromptItem[],
    o: { step: number; uidPrefix: string; genBatch: number },
  ): Promise<{ batch: GenBatch; metrics: Record<string, number> }>;
  /** Publishes the jobs of the steps after `step` that max_staleness allows to run ahead. */
  prefetch(parts: TrainerParts, step: number): Promise<void>;
  /** Masks out groups whose log-probs or rewards disagree with the trainer's. */
  verify(
    parts: TrainerParts,
    batch: LogProbBatch,
  ): { batch: LogProbBatch; metrics: Record<string, number> };
  /**
   * Bypass mode: the log-prob check inside the actor update (verify checked the rewards only);
   * its metrics() are the step's distributed/rejected* and logprob_diff/* metrics.
   */
  audit(
    parts: TrainerParts,
    batch: GenBatch,
  ): MiniBatchAudit & { metrics(): Record<string, number> };
  /** Publishes the actor's weights as `version`. */
  publish(parts: TrainerParts, version: number): Promise<void>;
  /** Resolves once the newest version is stored for the workers (rejects if that failed). */
  published(): Promise<void>;
  close(): Promise<void>;
}

export interface TrainerParts {
  config: PpoConfig;
  tokenizer: Tokenizer;
  actor: { model: CausalModel; optimizer: Optimizer };
  ref: CausalModel | null;
  critic: { model: ValueModel; optimizer: Optimizer } | null;
  rollout: RolloutFn;
  /**
   * The agent loop's engine (multi_turn); without it each turn is a rollout call of its own
   * (a batch of one).
   */
  turnRollout?: TurnRolloutFn;
  trainLoader: PromptLoader;
  valItems: PromptItem[];
  reward: RewardManager;
  valReward: RewardManager;
  /** The agent loop's tools (multi_turn.tool_config_path); none for single-turn runs. */
  tools?: AgentTool[];
  /** The agent loop's interactions (multi_turn.interaction_config_path). */
  interactions?: AgentInteraction[];
  tracking: Logger;
  klCtrl: KlController | null;
  checkpoints: CheckpointStore | null;
  /** Optional sinks for generations (rollout_data_dir / validation_data_dir dumps, the web page). */
  onGenerations?: (kind: "train" | "val", step: number, rows: GenerationRow[]) => void;
  /** Called between steps; resolve false to stop early (the browser's pause/stop). */
  shouldContinue?: () => Promise<boolean> | boolean;
  print?: (line: string) => void;
  /** distributed.backend=nats: rollouts come from workers (src/trainer/remote.ts). */
  remote?: RemoteGen;
  /** Peak bytes of GPU buffers in use, for perf/max_memory_allocated_gb. */
  peakMemoryBytes?: () => number;
  /** Peak bytes of GPU buffers held by the pool (in use or free), for perf/max_memory_reserved_gb. */
  peakReservedBytes?: () => number;
}

export interface GenerationRow {
  input: string;
  output: string;
  score: number;
  ground_truth: string;
  data_source: string;
  step: number;
  /** Multi-turn samples: the conversation with roles. */
  messages?: ChatMessage[];
  /** Multi-turn samples: verl's turn count, the interaction's turn scores, tools' step rewards. */
  num_turns?: number;
  turn_scores?: number[];
  tool_rewards?: number[];
}
