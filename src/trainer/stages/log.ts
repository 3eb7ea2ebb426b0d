/** log: verl's data metrics of a step (scores, rewards, advantages, lengths, rollout entropy/KL). */
import {
  aggLoss,
  computeDataMetrics,
  klPenalty,
  maskedMean,
  rolloutProbsDiff,
} from "../../algos/mod.ts";
import { type AdvBatch, responseAttention } from "../batch.ts";
import { killPoint } from "../kill_point.ts";
import type { TrainerParts } from "../parts.ts";

/**
 * `entropy`: how the old-log-prob pass's entropy becomes actor/entropy; verl aggregates it with the
 * actor's loss_agg_mode and loss_scale_factor, as the update's own entropy term.
 */
export function dataMetrics(
  batch: AdvBatch,
  entropy: { lossAggMode: string; lossScaleFactor?: number | null },
): Record<string, number> {
  const P = batch.promptLength, R = batch.responseLength;
  const attentionMask = new Int32Array(batch.size * (P + R)); // [B, P + R]
  for (let b = 0; b < batch.size; b++) {
    attentionMask.set(batch.promptMask.subarray(b * P, b * P + P), b * (P + R));
    attentionMask.set(responseAttention(batch.responseMask, R, b), b * (P + R) + P);
  }
  const m: Record<string, number> = computeDataMetrics({
    R,
    tokenLevelScores: batch.tokenLevelScores,
    tokenLevelRewards: batch.tokenLevelRewards,
    advantages: batch.advantages,
    returns: batch.returns,
    values: batch.values,
    responseMask: batch.responseMask,
    attentionMask,
  });
  if (batch.entropys) {
    m["actor/entropy"] = aggLoss(batch.entropys, batch.responseMask, entropy.lossAggMode, {
      R,
      lossScaleFactor: entropy.lossScaleFactor ?? undefined,
    });
  }
  // in bypass mode the old log-probs are the rollout's: nothing to compare
  if (batch.rolloutLogProbs && batch.rolloutLogProbs !== batch.oldLogProbs) {
    Object.assign(
      m,
      rolloutProbsDiff(batch.rolloutLogProbs, batch.oldLogProbs, batch.responseMask),
    );
  }
  if (batch.refLogProbs) {
    const kl = klPenalty(batch.oldLogProbs, batch.refLogProbs, "kl");
    m["actor/reference_kl"] = maskedMean(kl, batch.responseMask);
  }
  return m;
}

/** Throughput and memory of a step that took `seconds` (verl's perf/*). */
export function perfMetrics(
  parts: TrainerParts,
  batch: Pick<AdvBatch, "promptMask" | "responseMask">,
  seconds: number,
): Record<string, number> {
  let tokens = 0;
  for (const m of batch.promptMask) tokens += m;
  for (const m of batch.responseMask) tokens += m;
  return {
    "timing_s/step": seconds,
    "perf/total_num_tokens": tokens,
    "perf/throughput": tokens / seconds,
    "perf/time_per_step": seconds,
    ...(parts.peakMemoryBytes
      ? { "perf/max_memory_allocated_gb": parts.peakMemoryBytes() / 2 ** 30 }
      : {}),
    ...(parts.peakReservedBytes
      ? { "perf/max_memory_reserved_gb": parts.peakReservedBytes() / 2 ** 30 }
      : {}),
  };
}

/**
 * Sends a step's metrics to every configured logger. They are flushed before the step's checkpoint
 * (stages/save.ts); a crash in between leaves records that the resumed run cuts and logs again.
 */
export function log(parts: TrainerParts, step: number, metrics: Record<string, number>): void {
  parts.tracking.log(step, metrics);
  killPoint("DURING_LOG", step);
}
