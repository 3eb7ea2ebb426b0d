/**
 * gen_max: for estimators whose baseline is the reward of a greedy rollout (remax), decode each
 * prompt once greedily, score it, and give every sample of the prompt that reward as its
 * baseline. As in verl, the baseline is the summed token-level score of the greedy response.
 */
import type { PromptItem } from "../../data/mod.ts";
import type { GenBatch } from "../batch.ts";
import type { TrainerParts } from "../parts.ts";
import { gen } from "./gen.ts";
import { reward } from "./reward.ts";

export async function genBaseline(
  parts: TrainerParts,
  items: PromptItem[],
  batch: GenBatch,
  options: { step: number },
): Promise<GenBatch> {
  const greedy = await gen(parts, items, {
    step: options.step,
    n: 1,
    validation: false,
    uidPrefix: `s${options.step}-greedy`,
    greedy: true,
  });
  const scored = (await reward(parts, greedy, { validation: false })).batch;
  const R = scored.responseLength, n = batch.size / items.length;
  const rewardBaselines = new Float32Array(batch.size); // [B]
  for (let p = 0; p < items.length; p++) {
    let sum = 0;
    for (let r = 0; r < R; r++) sum += scored.tokenLevelScores[p * R + r];
    rewardBaselines.fill(sum, p * n, p * n + n);
  }
  return { ...batch, rewardBaselines };
}
