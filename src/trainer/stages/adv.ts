/** adv: token rewards (scores minus beta * KL when use_kl_in_reward), then the estimator. */
import { applyKlPenalty, computeAdvantage, type KlController } from "../../algos/mod.ts";
import type { AdvBatch, ValuedBatch } from "../batch.ts";
import type { TrainerParts } from "../parts.ts";

export function adv(
  parts: TrainerParts,
  batch: ValuedBatch,
  klCtrl: KlController | null,
): { batch: AdvBatch; metrics: Record<string, number> } {
  const alg = parts.config.algorithm;
  const R = batch.responseLength;
  let rewards = batch.tokenLevelScores;
  const metrics: Record<string, number> = {};
  if (alg.use_kl_in_reward && klCtrl && batch.refLogProbs) {
    const kl = applyKlPenalty({
      R,
      tokenLevelScores: rewards,
      oldLogProbs: batch.oldLogProbs,
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
    rewardBaselines: batch.rewardBaselines,
    oldLogProbs: batch.oldLogProbs,
    sumPiSquared: batch.sumPiSquared,
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
