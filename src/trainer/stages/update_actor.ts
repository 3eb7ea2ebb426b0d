/** update_actor: PPO epochs over shuffled mini-batches with the configured policy loss. */
import type { PpoConfig } from "../../config/mod.ts";
import { logProbTemperature } from "../../rollout/mod.ts";
import { type ActorUpdateOptions, updateActor } from "../actor.ts";
import type { Tick } from "../../tracking/mod.ts";
import type { AdvBatch } from "../batch.ts";
import type { MiniBatchAudit } from "../minibatch.ts";
import type { TrainerParts } from "../parts.ts";
import { microBatching } from "../util.ts";

/** The update's loss settings from the config (verl's actor keys and bypass mode). */
export function actorLossOptions(config: PpoConfig): ActorUpdateOptions["loss"] {
  const a = config.actor_rollout_ref.actor;
  const rc = config.algorithm.rollout_correction;
  // verl's bypass loss: ppo_clip is vanilla against the rollout policy; reinforce has its own
  const reinforce = rc.bypass_mode && rc.loss_type === "reinforce";
  return {
    policyLoss: reinforce ? "reinforce" : a.policy_loss.loss_mode,
    rolloutIs: reinforce ? rc.rollout_is as "token" | "sequence" | null : null,
    rolloutIsThreshold: rc.rollout_is_threshold,
    clipRatio: a.clip_ratio,
    clipRatioLow: a.clip_ratio_low,
    clipRatioHigh: a.clip_ratio_high,
    clipRatioC: a.clip_ratio_c,
    lossAggMode: a.loss_agg_mode,
    entropyCoeff: a.entropy_coeff,
    calculateEntropy: a.calculate_entropy,
    lossScaleFactor: a.loss_scale_factor ?? undefined,
    useKlLoss: a.use_kl_loss,
    klLossCoef: a.kl_loss_coef,
    klLossType: a.kl_loss_type,
    tauPos: a.tau_pos,
    tauNeg: a.tau_neg,
    clipCovRatio: a.policy_loss.clip_cov_ratio,
    clipCovLb: a.policy_loss.clip_cov_lb,
    clipCovUb: a.policy_loss.clip_cov_ub,
    klCovRatio: a.policy_loss.kl_cov_ratio,
    ppoKlCoef: a.policy_loss.ppo_kl_coef,
  };
}

/** keep_logits_gb in bytes: the LM-head logits a micro-batch's backward may take from its forward. */
export function keepLogitsBytes(config: PpoConfig): number {
  return config.actor_rollout_ref.actor.keep_logits_gb * 1e9;
}

export function updateActorStage(
  parts: TrainerParts,
  batch: AdvBatch,
  options: { step: number; lr: number; onProgress?: Tick; audit?: MiniBatchAudit },
): Promise<Record<string, number>> {
  const a = parts.config.actor_rollout_ref.actor;
  const n = parts.config.actor_rollout_ref.rollout.n;
  return updateActor(parts.actor.model, parts.actor.optimizer, batch, {
    ppoEpochs: a.ppo_epochs,
    miniBatchSize: a.ppo_mini_batch_size * n,
    ...microBatching(parts.config, "actor"),
    shuffle: a.shuffle,
    seed: parts.config.trainer.seed,
    step: options.step,
    lr: options.lr,
    onProgress: options.onProgress,
    audit: options.audit,
    gradClip: a.grad_clip,
    temperature: logProbTemperature(parts.config.actor_rollout_ref.rollout.temperature),
    loss: actorLossOptions(parts.config),
    keepLogitsBytes: keepLogitsBytes(parts.config),
  });
}
