/**
 * The named stages of one PPO/GRPO step. Each takes the Batch and the trainer's parts and returns
 * the Batch with new fields; `fit()` calls them in order.
 */
import { deriveSeed } from "../tensor/mod.ts";
import {
  applyKlPenalty,
  computeAdvantage,
  computeDataMetrics,
  type KlController,
  klPenalty,
  maskedMean,
} from "../algos/mod.ts";
import type { PpoConfig } from "../config/mod.ts";
import type { Batch } from "./batch.ts";
import { computeLogProbs, updateActor } from "./actor.ts";
import { computeValues, updateCritic } from "./critic.ts";
import type { TrainerParts } from "./parts.ts";

/** One prompt as the loader yields it. */
export interface PromptItem {
  inputIds: number[];
  dataSource: string;
  groundTruth: string;
  extraInfo: Record<string, unknown>;
  index: number;
}

/** gen: left-pads the prompts, repeats each n times (grouped by uid) and samples responses. */
export async function gen(
  parts: TrainerParts,
  items: PromptItem[],
  options: { step: number; n: number; validation: boolean; uidPrefix: string },
): Promise<Batch> {
  const cfg = parts.config.actor_rollout_ref.rollout;
  const sampling = options.validation ? { ...cfg, ...cfg.val_kwargs } : cfg;
  const P = Math.max(1, ...items.map((it) => it.inputIds.length));
  const B0 = items.length;
  const prompts = new Int32Array(B0 * P).fill(parts.tokenizer.padTokenId);
  const promptMask = new Int32Array(B0 * P);
  items.forEach((it, b) => {
    prompts.set(it.inputIds, b * P + P - it.inputIds.length);
    promptMask.fill(1, b * P + P - it.inputIds.length, b * P + P);
  });
  const out = await parts.rollout({
    inputIds: prompts,
    attentionMask: promptMask,
    batch: B0,
    promptLength: P,
  }, {
    n: options.n,
    responseLength: parts.config.data.max_response_length,
    temperature: sampling.temperature,
    topK: sampling.top_k,
    topP: sampling.top_p,
    doSample: sampling.do_sample,
    seed: deriveSeed(parts.config.trainer.seed, options.step, options.validation ? 1 : 0),
  });
  const n = options.n, B = B0 * n, R = parts.config.data.max_response_length;
  const rep = <T>(xs: T[]) => xs.flatMap((x) => Array<T>(n).fill(x));
  const repRows = (src: Int32Array) => {
    const dst = new Int32Array(B * P);
    for (let b = 0; b < B; b++) {
      dst.set(src.subarray(Math.floor(b / n) * P, Math.floor(b / n) * P + P), b * P);
    }
    return dst;
  };
  return {
    size: B,
    promptLength: P,
    responseLength: R,
    uid: rep(items.map((it) => `${options.uidPrefix}-${it.index}`)),
    dataSource: rep(items.map((it) => it.dataSource)),
    groundTruth: rep(items.map((it) => it.groundTruth)),
    extraInfo: rep(items.map((it) => it.extraInfo)),
    prompts: repRows(prompts),
    promptMask: repRows(promptMask),
    responses: out.responses,
    responseMask: out.responseMask,
    rolloutLogProbs: out.logProbs,
  };
}

/** reward: decode and score; the score sits at the last valid response token. */
export async function reward(
  parts: TrainerParts,
  batch: Batch,
  options: { validation: boolean },
): Promise<{ batch: Batch; metrics: Record<string, number> }> {
  const manager = options.validation ? parts.valReward : parts.reward;
  const res = await manager.score({
    responseIds: batch.responses,
    responseMask: batch.responseMask,
    responseLength: batch.responseLength,
    dataSources: batch.dataSource,
    groundTruths: batch.groundTruth,
    extraInfos: batch.extraInfo,
  });
  if (res.failures.length * 2 > batch.size) {
    // A reward function that fails for most samples is broken, not unlucky: stop the run.
    const f = res.failures[0];
    throw new Error(
      `reward function failed for ${res.failures.length} of ${batch.size} samples; first: ` +
        `sample ${f.index} (${f.dataSource}) ${f.kind}: ${f.message}`,
    );
  }
  return {
    batch: {
      ...batch,
      tokenLevelScores: res.tokenLevelScores,
      responseTexts: res.responses,
      rewardExtraInfo: res.rewardExtraInfo as Batch["rewardExtraInfo"],
    },
    metrics: res.metrics,
  };
}

function micro(cfg: PpoConfig, key: "actor" | "ref" | "rollout"): number {
  const a = cfg.actor_rollout_ref;
  if (key === "actor") return a.actor.ppo_micro_batch_size_per_gpu ?? 8;
  if (key === "ref") return a.ref.log_prob_micro_batch_size_per_gpu ?? 8;
  return a.rollout.log_prob_micro_batch_size_per_gpu ?? 8;
}

/** old_log_prob: the actor's log-probs and entropies of the sampled responses. */
export async function oldLogProb(parts: TrainerParts, batch: Batch): Promise<Batch> {
  const r = await computeLogProbs(parts.actor.model, batch, {
    microBatchSize: micro(parts.config, "rollout"),
    withEntropy: true,
    temperature: parts.config.actor_rollout_ref.rollout.temperature,
  });
  return { ...batch, oldLogProbs: r.logProbs, entropys: r.entropys ?? undefined };
}

/** ref: the frozen reference's log-probs (only when a KL term is used). */
export async function ref(parts: TrainerParts, batch: Batch): Promise<Batch> {
  if (!parts.ref) return batch;
  const r = await computeLogProbs(parts.ref, batch, {
    microBatchSize: micro(parts.config, "ref"),
    withEntropy: false,
    temperature: parts.config.actor_rollout_ref.rollout.temperature,
  });
  return { ...batch, refLogProbs: r.logProbs };
}

/** values: the critic's values (GAE only). */
export async function values(parts: TrainerParts, batch: Batch): Promise<Batch> {
  if (!parts.critic) return batch;
  const v = await computeValues(parts.critic.model, batch, {
    microBatchSize: parts.config.critic.ppo_micro_batch_size_per_gpu ?? 8,
  });
  return { ...batch, values: v };
}

/** adv: rewards (minus beta * KL when use_kl_in_reward), then the configured estimator. */
export function adv(
  parts: TrainerParts,
  batch: Batch,
  klCtrl: KlController | null,
): { batch: Batch; metrics: Record<string, number> } {
  const alg = parts.config.algorithm;
  const R = batch.responseLength;
  let rewards = batch.tokenLevelScores!;
  const metrics: Record<string, number> = {};
  if (alg.use_kl_in_reward && klCtrl && batch.refLogProbs) {
    const kl = applyKlPenalty({
      R,
      tokenLevelScores: rewards,
      oldLogProbs: batch.oldLogProbs!,
      refLogProb: batch.refLogProbs,
      responseMask: batch.responseMask,
    }, { beta: klCtrl.value, klPenalty: alg.kl_penalty });
    klCtrl.update(kl.currentKl, batch.size);
    rewards = kl.tokenLevelRewards as Float32Array;
    Object.assign(metrics, kl.metrics);
  }
  const out = computeAdvantage(alg.adv_estimator, {
    R,
    tokenLevelRewards: rewards,
    responseMask: batch.responseMask,
    values: batch.values,
    uids: batch.uid,
  }, {
    gamma: alg.gamma,
    lam: alg.lam,
    normAdvByStdInGrpo: alg.norm_adv_by_std_in_grpo,
  });
  return {
    batch: {
      ...batch,
      tokenLevelRewards: rewards,
      advantages: out.advantages as Float32Array,
      returns: out.returns as Float32Array,
    },
    metrics,
  };
}

/** update_critic: value-loss epochs over mini-batches. */
export function updateCriticStage(
  parts: TrainerParts,
  batch: Batch,
  options: { step: number; lr: number },
): Promise<Record<string, number>> {
  const c = parts.config.critic;
  const n = parts.config.actor_rollout_ref.rollout.n;
  return updateCritic(parts.critic!.model, parts.critic!.optimizer, batch, {
    ppoEpochs: c.ppo_epochs,
    miniBatchSize: c.ppo_mini_batch_size * n,
    microBatchSize: c.ppo_micro_batch_size_per_gpu ?? 8,
    shuffle: c.shuffle,
    seed: parts.config.trainer.seed,
    step: options.step,
    lr: options.lr,
    gradClip: c.grad_clip,
    cliprangeValue: c.cliprange_value,
    lossAggMode: c.loss_agg_mode,
  });
}

/** update_actor: PPO epochs over mini-batches with the configured policy loss. */
export function updateActorStage(
  parts: TrainerParts,
  batch: Batch,
  options: { step: number; lr: number },
): Promise<Record<string, number>> {
  const a = parts.config.actor_rollout_ref.actor;
  const n = parts.config.actor_rollout_ref.rollout.n;
  return updateActor(parts.actor.model, parts.actor.optimizer, batch, {
    ppoEpochs: a.ppo_epochs,
    miniBatchSize: a.ppo_mini_batch_size * n,
    microBatchSize: micro(parts.config, "actor"),
    shuffle: a.shuffle,
    seed: parts.config.trainer.seed,
    step: options.step,
    lr: options.lr,
    gradClip: a.grad_clip,
    temperature: parts.config.actor_rollout_ref.rollout.temperature,
    loss: {
      policyLoss: a.policy_loss.loss_mode,
      clipRatio: a.clip_ratio,
      clipRatioLow: a.clip_ratio_low ?? a.clip_ratio,
      clipRatioHigh: a.clip_ratio_high ?? a.clip_ratio,
      clipRatioC: a.clip_ratio_c,
      lossAggMode: a.loss_agg_mode,
      entropyCoeff: a.entropy_coeff,
      useKlLoss: a.use_kl_loss,
      klLossCoef: a.kl_loss_coef,
      klLossType: a.kl_loss_type,
    },
  });
}

/** verl's data metrics (scores, rewards, advantages, lengths) plus the rollout's entropy/KL. */
export function dataMetrics(batch: Batch): Record<string, number> {
  const P = batch.promptLength, R = batch.responseLength;
  const attentionMask = new Int32Array(batch.size * (P + R));
  for (let b = 0; b < batch.size; b++) {
    attentionMask.set(batch.promptMask.subarray(b * P, b * P + P), b * (P + R));
    attentionMask.set(batch.responseMask.subarray(b * R, b * R + R), b * (P + R) + P);
  }
  const m: Record<string, number> = computeDataMetrics({
    R,
    tokenLevelScores: batch.tokenLevelScores!,
    tokenLevelRewards: batch.tokenLevelRewards ?? batch.tokenLevelScores!,
    advantages: batch.advantages!,
    returns: batch.returns!,
    values: batch.values,
    responseMask: batch.responseMask,
    attentionMask,
  });
  if (batch.entropys) m["actor/entropy"] = maskedMean(batch.entropys, batch.responseMask);
  if (batch.refLogProbs && batch.oldLogProbs) {
    const kl = klPenalty(batch.oldLogProbs, batch.refLogProbs, "kl");
    m["actor/reference_kl"] = maskedMean(kl, batch.responseMask);
  }
  return m;
}
