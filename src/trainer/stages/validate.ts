/** Validation: greedy (by `val_kwargs`) generations on the held-out prompts, scored per source. */
import { Progress } from "../../tracking/mod.ts";
import { chunks, range, type ScoredBatch } from "../batch.ts";
import type { GenerationRow, TrainerParts } from "../parts.ts";
import { gen } from "./gen.ts";
import { agentDumpFields } from "../agent.ts";
import { reward } from "./reward.ts";

/** One row per sample for the generation dumps and the page's table. */
export function generationRows(
  parts: TrainerParts,
  batch: ScoredBatch,
  step: number,
): GenerationRow[] {
  const P = batch.promptLength;
  return range(batch.size).map((b) => {
    const ids = batch.prompts.subarray(b * P, b * P + P).filter((_, j) =>
      batch.promptMask[b * P + j]
    );
    let score = 0;
    const R = batch.responseLength;
    for (let r = 0; r < R; r++) score += batch.tokenLevelScores[b * R + r];
    return {
      input: parts.tokenizer.decode(ids, { skipSpecialTokens: false }),
      output: batch.responseTexts[b] ?? "",
      score,
      ground_truth: batch.groundTruth[b],
      data_source: batch.dataSource[b],
      step,
      ...(batch.conversations
        ? { messages: batch.conversations[b], ...agentDumpFields(batch.extraInfo[b]) }
        : {}),
    };
  });
}

/** `val-core/{data_source}/reward/mean@N` (and the per-source accuracy) over all held-out prompts. */
export async function validate(parts: TrainerParts, step: number): Promise<Record<string, number>> {
  const cfg = parts.config;
  const n = cfg.actor_rollout_ref.rollout.val_kwargs.n;
  const size = cfg.data.val_batch_size ?? parts.valItems.length;
  const bySource = new Map<string, number[]>();
  const rows: GenerationRow[] = [];
  const batches = chunks(range(parts.valItems.length), Math.max(1, size));
  const progress = new Progress(`validate step ${step}`, batches.length);
  for (const [k, idx] of batches.entries()) {
    const items = idx.map((i) => parts.valItems[i]);
    const onProgress = progress.tick(k, `batch ${k + 1}/${batches.length} gen`);
    progress.update(k, `batch ${k + 1}/${batches.length}`);
    const generated = await gen(parts, items, {
      step,
      n,
      validation: true,
      uidPrefix: "val",
      onProgress,
    });
    const { batch } = await reward(parts, generated, { validation: true });
    for (const row of generationRows(parts, batch, step)) {
      rows.push(row);
      const list = bySource.get(row.data_source) ?? [];
      list.push(row.score);
      bySource.set(row.data_source, list);
    }
  }
  progress.done();
  const metrics: Record<string, number> = {};
  for (const [source, scores] of bySource) {
    const mean = scores.reduce((a, b) => a + b, 0) / scores.length;
    metrics[`val-core/${source}/reward/mean@${n}`] = mean;
  }
  parts.onGenerations?.("val", step, rows);
  const show = cfg.trainer.log_val_generations;
  if (show > 0) {
    for (const r of rows.slice(0, show)) {
      (parts.print ?? console.log)(
        `[val] ${JSON.stringify(r.input)} -> ${JSON.stringify(r.output)} score=${r.score}`,
      );
    }
  }
  return metrics;
}
