/**
 * Micro-batches by count or by token budget (verl's `use_dynamic_bsz` with
 * `ppo_max_token_len_per_gpu` / `log_prob_max_token_len_per_gpu` / `forward_max_token_len_per_gpu`).
 *
 * With a budget, the rows of a (mini-)batch are split by their token counts (prompt + response
 * attention mask, as verl's `attention_mask.sum(-1)`) into k = ceil(total / budget) groups
 * balanced by a longest-first greedy partition, raising k until every group fits the budget;
 * groups run heaviest first (by Σ length², the attention cost), as verl orders them. The losses
 * aggregate against mini-batch totals (ppo_micro_loss.ts), so how rows are grouped changes the
 * result only by f32 rounding.
 */
import { type Batch, chunks } from "./batch.ts";

/**
 * How a pass splits its rows: a fixed count, or a token budget when `maxTokenLen` is set; and
 * whether each micro-batch runs packed.
 */
export interface MicroBatching {
  /** Samples per micro-batch; null (verl's default) only with a token budget. */
  microBatchSize: number | null;
  /** use_remove_padding: the model's token-wise work runs on the real tokens only. */
  removePadding?: boolean;
  /** Tokens per micro-batch (use_dynamic_bsz); null: `microBatchSize` rows each. */
  maxTokenLen?: number | null;
  /** The config key of the budget, for errors. */
  budgetKey?: string;
}

/** Prompt + response tokens of each row (the attention mask's sum). */
export function rowTokens(batch: Batch, rows: readonly number[]): number[] {
  const P = batch.promptLength, R = batch.responseLength;
  return rows.map((b) => {
    let n = 0;
    for (let i = 0; i < P; i++) n += batch.promptMask[b * P + i] !== 0 ? 1 : 0;
    for (let i = 0; i < R; i++) n += batch.responseMask[b * R + i] !== 0 ? 1 : 0;
    return n;
  });
}

/**
 * Splits `lengths` (one per row) into groups of at most `budget` tokens: indices into `lengths`,
 * ascending within a group, heaviest group first. Every length must fit the budget.
 */
export function partitionByTokens(lengths: readonly number[], budget: number): number[][] {
  const n = lengths.length;
  if (n === 0) return [];
  const total = lengths.reduce((a, b) => a + b, 0);
  const order = [...lengths.keys()].sort((a, b) => lengths[b] - lengths[a] || a - b);
  for (let k = Math.max(1, Math.min(n, Math.ceil(total / budget))); k <= n; k++) {
    const groups: number[][] = Array.from({ length: k }, () => []);
    const sums = new Array<number>(k).fill(0);
    for (const i of order) {
      let best = 0;
      for (let g = 1; g < k; g++) if (sums[g] < sums[best]) best = g;
      groups[best].push(i);
      sums[best] += lengths[i];
    }
    if (sums.every((s) => s <= budget)) {
      const work = (g: number[]) => g.reduce((a, i) => a + lengths[i] ** 2, 0);
      return groups.map((g) => g.sort((a, b) => a - b))
        .sort((a, b) => work(b) - work(a) || a[0] - b[0]);
    }
  }
  throw new Error(`partitionByTokens: a row is longer than the budget of ${budget} tokens`);
}

/** The micro-batches (batch row indices) of `rows` under `m`. */
export function microBatches(batch: Batch, rows: readonly number[], m: MicroBatching): number[][] {
  if (m.maxTokenLen == null) {
    if (m.microBatchSize == null) throw new Error("microBatches: no micro-batch size or budget");
    return chunks(rows, m.microBatchSize);
  }
  const T = batch.promptLength + batch.responseLength;
  if (m.maxTokenLen < T) {
    throw new Error(
      `${m.budgetKey ?? "max_token_len"}=${m.maxTokenLen} is below the batch's padded sequence ` +
        `length ${T} (prompt + response columns); raise it to at least ${T}`,
    );
  }
  return partitionByTokens(rowTokens(batch, rows), m.maxTokenLen).map((g) => g.map((i) => rows[i]));
}
