/**
 * The PPO/GRPO controller. `trainStep` reads like the list of stages in the design: gen, reward,
 * old_log_prob, ref, values, adv, update_critic, update_actor; `fit` adds log / validate / save.
 * Each stage is one file in stages/ and adds its fields to the typed batch.
 */
import { ADV_ESTIMATORS } from "../algos/mod.ts";
import type { PromptItem } from "../data/mod.ts";
import { Progress } from "../tracking/mod.ts";
import type { TrainerParts } from "./parts.ts";
import { adv } from "./stages/adv.ts";
import { gen } from "./stages/gen.ts";
import { genBaseline } from "./stages/gen_baseline.ts";
import { filterGroups, type Sampled } from "./stages/filter_groups.ts";
import { dataMetrics, log, perfMetrics } from "./stages/log.ts";
import { bypassOldLogProb, oldLogProb } from "./stages/old_log_prob.ts";
import { ref } from "./stages/ref.ts";
import { reward } from "./stages/reward.ts";
import { rolloutCorrection } from "./stages/rollout_corr.ts";
import { resume, save } from "./stages/save.ts";
import { updateActorStage } from "./stages/update_actor.ts";
import { updateCriticStage } from "./stages/update_critic.ts";
import { generationRows, validate } from "./stages/validate.ts";
import { values } from "./stages/values.ts";
import { failedSteps } from "./optimizer_step.ts";
import { learningRate, Timer } from "./util.ts";

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
    numCycles: optim.num_cycles,
  });
}

/** One training step on one batch of prompts; returns the step's metrics. */
export async function trainStep(
  parts: TrainerParts,
  step: number,
  items: PromptItem[],
): Promise<Record<string, number>> {
  const n = parts.config.actor_rollout_ref.rollout.n;
  // A terminal shows which stage of a long step is running; logs stay one line per step.
  const needsBaseline =
    ADV_ESTIMATORS.get(parts.config.algorithm.adv_estimator).greedyBaseline === true;
  const bypass = parts.config.algorithm.rollout_correction.bypass_mode;
  const stages = 5 - (bypass ? 1 : 0) + (needsBaseline ? 1 : 0) + (parts.ref ? 1 : 0) +
    (parts.critic ? 2 : 0);
  const progress = new Progress(`step ${step}`, stages);
  let done = -1; // stages started; dynamic sampling may run gen and reward more than once
  const timer = new Timer((name, d, total) => {
    if (d === undefined) done++;
    const at = Math.min(done, stages);
    progress.update(at, d === undefined ? name : `${name} ${d}/${total}`);
  });
  const time = timer.time.bind(timer);
  const t0 = performance.now();

  // gen, gen_max, reward for one generation batch (the k-th of the step under dynamic sampling)
  const sample = async (batchItems: PromptItem[], k: number): Promise<Sampled> => {
    const uidPrefix = k === 1 ? `s${step}` : `s${step}-g${k}`;
    const sampled = await time(
      "gen",
      (onProgress) =>
        gen(parts, batchItems, {
          step,
          n,
          validation: false,
          uidPrefix,
          genBatch: k,
          onProgress,
        }),
    );
    const generated = needsBaseline
      ? await time("gen_max", () => genBaseline(parts, batchItems, sampled, { step }))
      : sampled;
    return await time("reward", () => reward(parts, generated, { validation: false }));
  };
  const scored = parts.config.algorithm.filter_groups.enable
    ? await filterGroups(parts, items, sample)
    : await sample(items, 1);
  // max_staleness >= 1: the next steps' jobs are generated while this step updates.
  await parts.remote?.prefetch(parts, step);
  // bypass mode: the rollout's log-probs stand in; no old_log_prob pass (and no timing for it)
  const withLogProbs = bypass
    ? bypassOldLogProb(scored.batch)
    : await time("old_log_prob", () => oldLogProb(parts, scored.batch));
  const verified = parts.remote?.verify(parts, withLogProbs) ??
    { batch: withLogProbs, metrics: {} };
  if (!verified.batch.responseMask.includes(1)) {
    // Every group was rejected (distributed.*: an untrusted worker took all of this step's jobs):
    // no token to learn from, so the step skips its advantages and updates; the weights are
    // published again so that the workers go on.
    const remote = parts.remote;
    if (remote) await time("publish_weights", () => remote.publish(parts, step));
    progress.done();
    return {
      ...scored.batch.rolloutMetrics,
      ...scored.metrics,
      ...verified.metrics,
      "distributed/empty_steps": 1,
      ...timer.timings,
      ...perfMetrics(parts, verified.batch, (performance.now() - t0) / 1000),
    };
  }
  // ... so a worker's log-probs are checked inside the actor update instead
  const audit = bypass ? parts.remote?.audit(parts, verified.batch) : undefined;
  const withRef = await time("ref", () => ref(parts, verified.batch), parts.ref !== null);
  const valued = await time("values", () => values(parts, withRef), parts.critic !== null);
  const advantaged = await time("adv", () => adv(parts, valued, parts.klCtrl));
  const corrected = rolloutCorrection(parts, advantaged.batch);
  const batch = corrected.batch;
  const critic = parts.critic
    ? await time(
      "update_critic",
      (onProgress) =>
        updateCriticStage(parts, batch, { step, lr: lrAt(parts, "critic", step - 1), onProgress }),
    )
    : {};
  const actor = step > parts.config.trainer.critic_warmup
    ? await time(
      "update_actor",
      (onProgress) =>
        updateActorStage(parts, batch, {
          step,
          lr: lrAt(parts, "actor", step - 1),
          onProgress,
          audit,
        }),
    )
    : {};
  const remote = parts.remote;
  if (remote) await time("publish_weights", () => remote.publish(parts, step));
  progress.done();

  parts.onGenerations?.("train", step, generationRows(parts, batch, step));
  return {
    ...scored.batch.rolloutMetrics,
    ...scored.metrics,
    ...advantaged.metrics,
    ...verified.metrics,
    ...audit?.metrics(),
    ...corrected.metrics,
    ...dataMetrics(batch, {
      lossAggMode: parts.config.actor_rollout_ref.actor.loss_agg_mode,
      lossScaleFactor: parts.config.actor_rollout_ref.actor.loss_scale_factor,
    }),
    ...critic,
    ...actor,
    ...timer.timings,
    ...perfMetrics(parts, batch, (performance.now() - t0) / 1000),
  };
}

/**
 * Updates skipped for a non-finite grad norm that count towards max_nonfinite_steps. Under loss
 * scaling an overflow at a scale above 1 is the scaler's to handle (it backs off); gradients that
 * are not finite even at scale 1 count as in f32.
 */
function skippedUpdates(m: Record<string, number>): number {
  return failedSteps(m, "actor") + failedSteps(m, "critic");
}

/** Nothing is saved for the failing steps: the latest checkpoint is the last good state. */
function nonFiniteError(step: number, k: number, m: Record<string, number>): Error {
  const counts = ["actor", "critic"]
    .filter((w) => m[`${w}/skipped_steps`] !== undefined)
    .map((w) => `${w}/skipped_steps=${m[`${w}/skipped_steps`]}`).join(", ");
  return new Error(
    `training stopped at step ${step}: ${k} consecutive steps had a NaN/Inf gradient norm ` +
      `(trainer.max_nonfinite_steps=${k}; at step ${step}: ${counts}); skipped updates leave ` +
      `the weights as they were. Resume from the latest checkpoint with a lower optim.lr or ` +
      `grad_clip, or check the data and the rewards`,
  );
}

/** The whole run: resume, validate, train for the configured steps, validate and save. */
export async function fit(parts: TrainerParts): Promise<FitResult> {
  const t = parts.config.trainer;
  const total = totalSteps(parts);
  let step = await resume(parts);
  let lastValidation: Record<string, number> = {};
  if ((t.val_before_train && step === 0) || t.val_only) {
    lastValidation = await validate(parts, step);
    log(parts, step, lastValidation);
    if (t.val_only) return { globalStep: step, lastMetrics: {}, lastValidation };
  }
  let lastMetrics: Record<string, number> = {};
  let nonFinite = 0; // consecutive steps with a skipped (non-finite) update
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
    log(parts, step, metrics); // on disk before the checkpoint that covers the step
    nonFinite = skippedUpdates(metrics) > 0 ? nonFinite + 1 : 0;
    if (nonFinite >= t.max_nonfinite_steps) throw nonFiniteError(step, nonFinite, metrics);
    if (t.save_freq > 0 && (step % t.save_freq === 0 || last)) await save(parts, step);
    lastMetrics = metrics;
  }
  return { globalStep: step, lastMetrics, lastValidation };
}
