/** reward: decode and score; the score sits at the last valid response token. */
import type { GenBatch, ScoredBatch } from "../batch.ts";
import type { TrainerParts } from "../parts.ts";

export async function reward(
  parts: TrainerParts,
  batch: GenBatch,
  options: { validation: boolean },
): Promise<{ batch: ScoredBatch; metrics: Record<string, number> }> {
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
      rewardExtraInfo: res.rewardExtraInfo as ScoredBatch["rewardExtraInfo"],
    },
    metrics: res.metrics,
  };
}
