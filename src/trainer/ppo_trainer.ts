/**
 * The PPO/GRPO controller. `fit()` reads like the list of stages in the design: gen, reward,
 * old_log_prob, ref, values, adv, update_critic, update_actor, then log / validate / save.
 */
import type { Batch } from "./batch.ts";
import type { TrainerParts } from "./parts.ts";
import {
  adv,
  dataMetrics,
  gen,
  oldLogProb,
  ref,
  reward,
  updateActorStage,
  updateCriticStage,
  values,
} from "./stages.ts";
import { learningRate, Timer } from "./util.ts";
import { Progress } from "../tracking/mod.ts";
import { generationRows, validate } from "./validate.ts";

export interface FitResult {
  globalStep: number;
  lastMetrics: Record<string, number>;
  lastValidation: Record<string, number>;
}

/** Steps the run will take: total_training_steps, else total_epochs worth of batches. */
export function totalSteps(parts: TrainerParts): number {
  const t = parts.config.trainer;
  return t.total_training_steps ?? parts.trainLoader.batchesPerEpoch * t.total_epochs;
}

function lrAt(parts: TrainerParts, which: "actor" | "critic", step: number): number {
  const optim = which === "actor"
    ? parts.config.actor_rollout_ref.actor.optim
    : parts.config.critic.optim;
  const total = totalSteps(parts);
  const warmup = optim.lr_warmup_steps >= 0
    ? optim.lr_warmup_steps
    : Math.floor((optim.lr_warmup_steps_ratio ?? 0) * total);
  return learningRate(step, {
    lr: optim.lr,
    totalSteps: total,
    warmupSteps: warmup,
    // normalizePpo has already copied the deprecated warmup_style onto lr_scheduler_type.
    style: optim.lr_scheduler_type === "cosine" ? "cosine" : "constant",
    minLrRatio: optim.min_lr_ratio,
  });
}

/** One training step on one batch of prompts; returns the step's metrics. */
export async function trainStep(
  parts: TrainerParts,
  step: number,
  items: Parameters<typeof gen>[1],
): Promise<Record<string, number>> {
  const cfg = parts.config;
  const n = cfg.actor_rollout_ref.rollout.n;
  const stages = 5 + (parts.ref ? 1 : 0) + (parts.critic ? 2 : 0);
  // A terminal shows which stage of a long step is running; logs stay one line per step.
  const progress = new Progress(`step ${step}`, stages);
  let done = 0;
  const timer = new Timer((name) => progress.update(done++, name));
  const t0 = performance.now();
  let batch: Batch = await timer.time(
    "gen",
    () => gen(parts, items, { step, n, validation: false, uidPrefix: `s${step}` }),
  );
  const rewarded = await timer.time("reward", () => reward(parts, batch, { validation: false }));
  batch = rewarded.batch;
  batch = await timer.time("old_log_prob", () => oldLogProb(parts, batch));
  if (parts.ref) batch = await timer.time("ref", () => ref(parts, batch));
  if (parts.critic) batch = await timer.time("values", () => values(parts, batch));
  const advantaged = await timer.time("adv", () => adv(parts, batch, parts.klCtrl));
  batch = advantaged.batch;
  let criticMetrics: Record<string, number> = {};
  if (parts.critic) {
    criticMetrics = await timer.time(
      "update_critic",
      () => updateCriticStage(parts, batch, { step, lr: lrAt(parts, "critic", step - 1) }),
    );
  }
  let actorMetrics: Record<string, number> = {};
  if (step > cfg.trainer.critic_warmup) {
    actorMetrics = await timer.time(
      "update_actor",
      () => updateActorStage(parts, batch, { step, lr: lrAt(parts, "actor", step - 1) }),
    );
  }
  progress.done();
  const seconds = (performance.now() - t0) / 1000;
  let tokens = 0;
  for (const m of batch.promptMask) tokens += m;
  for (const m of batch.responseMask) tokens += m;
  if (parts.onGenerations) parts.onGenerations("train", step, generationRows(parts, batch, step));
  return {
    ...rewarded.metrics,
    ...advantaged.metrics,
    ...dataMetrics(batch),
    ...criticMetrics,
    ...actorMetrics,
    ...timer.timings,
    "timing_s/step": seconds,
    "perf/total_num_tokens": tokens,
    "perf/throughput": tokens / seconds,
    "perf/time_per_step": seconds,
    ...(parts.peakMemoryBytes
      ? { "perf/max_memory_allocated_gb": parts.peakMemoryBytes() / 2 ** 30 }
      : {}),
  };
}

/** The whole run: resume, validate, train for the configured steps, validate and save. */
export async function fit(parts: TrainerParts): Promise<FitResult> {
  const t = parts.config.trainer;
  const total = totalSteps(parts);
  let step = 0;
  const extra = await parts.checkpoints?.resume() ?? null;
  if (extra) {
    step = extra.global_step as number;
    parts.trainLoader.restore(extra.data_loader);
    if (extra.kl_ctrl && parts.klCtrl) parts.klCtrl.restore(extra.kl_ctrl as never);
    (parts.print ?? console.log)(`resumed from global_step_${step}`);
  }
  let lastValidation: Record<string, number> = {};
  if ((t.val_before_train && step === 0) || t.val_only) {
    lastValidation = await validate(parts, step);
    parts.tracking.log(step, lastValidation);
    if (t.val_only) return { globalStep: step, lastMetrics: {}, lastValidation };
  }
  let lastMetrics: Record<string, number> = {};
  while (step < total) {
    if (parts.shouldContinue && !(await parts.shouldContinue())) break;
    const items = parts.trainLoader.next() ?? parts.trainLoader.next();
    if (!items) throw new Error("the training set yields no batch (is data.train_files empty?)");
    step++;
    const metrics = await trainStep(parts, step, items);
    metrics["training/global_step"] = step;
    metrics["training/epoch"] = parts.trainLoader.epoch;
    const last = step === total;
    if (t.test_freq > 0 && (step % t.test_freq === 0 || last)) {
      lastValidation = await validate(parts, step);
      Object.assign(metrics, lastValidation);
    }
    if (parts.checkpoints && t.save_freq > 0 && (step % t.save_freq === 0 || last)) {
      const t0 = performance.now();
      await parts.checkpoints.save(step, {
        global_step: step,
        data_loader: parts.trainLoader.state(),
        kl_ctrl: parts.klCtrl?.state() ?? null,
      });
      metrics["timing_s/save_checkpoint"] = (performance.now() - t0) / 1000;
    }
    parts.tracking.log(step, metrics);
    lastMetrics = metrics;
  }
  return { globalStep: step, lastMetrics, lastValidation };
}
