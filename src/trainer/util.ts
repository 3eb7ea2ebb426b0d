/** Small helpers the controller shares: lr schedules, timers, metric reduction. */
import type { PpoConfig } from "../config/mod.ts";
import type { Tick } from "../tracking/mod.ts";
import type { MicroBatching } from "./dynamic_bsz.ts";

export interface LrScheduleOptions {
  lr: number;
  totalSteps: number;
  warmupSteps: number;
  style: "constant" | "cosine";
  minLrRatio?: number;
  numCycles?: number;
}

/**
 * Linear warmup from 0 to lr over warmupSteps, then constant or cosine decay to minLrRatio * lr
 * (as verl's FSDP workers do via get_cosine_schedule_with_warmup). `step` counts from 0.
 */
export function learningRate(step: number, o: LrScheduleOptions): number {
  if (o.warmupSteps > 0 && step < o.warmupSteps) return (o.lr * (step + 1)) / o.warmupSteps;
  if (o.style === "constant") return o.lr;
  const minRatio = o.minLrRatio ?? 0;
  const span = Math.max(1, o.totalSteps - o.warmupSteps);
  const progress = Math.min(1, (step - o.warmupSteps) / span);
  const cosine = 0.5 * (1 + Math.cos(Math.PI * 2 * (o.numCycles ?? 0.5) * progress));
  return o.lr * (minRatio + (1 - minRatio) * cosine);
}

/** Accumulates wall time per named stage for `timing_s/*`. */
export class Timer {
  readonly timings: Record<string, number> = {};

  /**
   * `onStage` hears each stage as it starts, then the stage's own progress through the Tick
   * handed to its function (the console progress bar).
   */
  constructor(private readonly onStage?: (name: string, done?: number, total?: number) => void) {}

  /** Runs fn; with `timed` false (a stage the run skips) it neither reports nor times it. */
  async time<T>(
    name: string,
    fn: (tick: Tick) => Promise<T> | T,
    timed = true,
  ): Promise<T> {
    const tick: Tick = (d, t) => this.onStage?.(name, d, t);
    if (!timed) return await fn(() => {});
    this.onStage?.(name);
    const t0 = performance.now();
    try {
      return await fn(tick);
    } finally {
      this.timings[`timing_s/${name}`] = (this.timings[`timing_s/${name}`] ?? 0) +
        (performance.now() - t0) / 1000;
    }
  }
}

/** Means of lists of per-micro-batch metrics (verl's reduce_metrics). */
export function reduceMetrics(lists: Record<string, number[]>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(lists)) {
    if (v.length) out[k] = v.reduce((a, b) => a + b, 0) / v.length;
  }
  return out;
}

export function appendMetrics(lists: Record<string, number[]>, m: Record<string, number>): void {
  for (const [k, v] of Object.entries(m)) (lists[k] ??= []).push(v);
}

/**
 * Micro-batch size (samples) of a forward pass: verl's `*_micro_batch_size_per_gpu`; null leaves
 * it to the pass's token budget (the config checks that use_dynamic_bsz is on).
 */
export function microBatchSize(cfg: PpoConfig, pass: "actor" | "ref" | "rollout"): number | null {
  const a = cfg.actor_rollout_ref;
  if (pass === "actor") return a.actor.ppo_micro_batch_size_per_gpu;
  if (pass === "ref") return a.ref.log_prob_micro_batch_size_per_gpu;
  return a.rollout.log_prob_micro_batch_size_per_gpu;
}

type Pass = "actor" | "ref" | "rollout" | "critic" | "values";

/**
 * How a pass runs its micro-batches: the micro-batch size, the token budget when the pass's
 * use_dynamic_bsz key is on (verl's `*_max_token_len_per_gpu`), and packed sequences when its
 * model's use_remove_padding is on (actor_rollout_ref.model for the actor, rollout and ref;
 * critic.model for the critic).
 */
export function microBatching(cfg: PpoConfig, pass: Pass): MicroBatching {
  const model = pass === "critic" || pass === "values"
    ? cfg.critic.model
    : cfg.actor_rollout_ref.model;
  return { ...split(cfg, pass), removePadding: model.use_remove_padding };
}

function split(cfg: PpoConfig, pass: Pass): MicroBatching {
  const a = cfg.actor_rollout_ref, c = cfg.critic;
  const budget = (on: boolean, tokens: number, key: string) =>
    on ? { maxTokenLen: tokens, budgetKey: key } : {};
  const AR = "actor_rollout_ref";
  switch (pass) {
    case "actor":
    case "ref":
    case "rollout": {
      const size = microBatchSize(cfg, pass);
      if (pass === "actor") {
        const key = `${AR}.actor.ppo_max_token_len_per_gpu`;
        return {
          microBatchSize: size,
          ...budget(a.actor.use_dynamic_bsz, a.actor.ppo_max_token_len_per_gpu, key),
        };
      }
      const s = pass === "ref" ? a.ref : a.rollout;
      const key = `${AR}.${pass}.log_prob_max_token_len_per_gpu`;
      return {
        microBatchSize: size,
        ...budget(s.log_prob_use_dynamic_bsz, s.log_prob_max_token_len_per_gpu, key),
      };
    }
    case "critic":
      return {
        microBatchSize: c.ppo_micro_batch_size_per_gpu,
        ...budget(
          c.use_dynamic_bsz,
          c.ppo_max_token_len_per_gpu,
          "critic.ppo_max_token_len_per_gpu",
        ),
      };
    case "values":
      return {
        microBatchSize: c.forward_micro_batch_size_per_gpu,
        ...budget(
          c.use_dynamic_bsz,
          c.forward_max_token_len_per_gpu,
          "critic.forward_max_token_len_per_gpu",
        ),
      };
  }
}
