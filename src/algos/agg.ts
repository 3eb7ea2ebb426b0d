/**
 * Loss aggregation (`actor.loss_agg_mode`): `[B, R]` per-token losses -> scalar,
 * following verl's `agg_loss` (global-batch aware form):
 *
 *   token-mean:               Σ_{b,t} m·L / N_tok · dp               N_tok = batchNumTokens ?? Σ m
 *   seq-mean-token-sum:       Σ_b (Σ_t m·L) / G · dp                 G = globalBatchSize ?? #{b: Σ_t m > 0}
 *   seq-mean-token-mean:      Σ_b (Σ_t m·L / Σ_t m) / G · dp          (rows with no valid token skipped)
 *   seq-mean-token-sum-norm:  Σ_{b,t} m·L / H                        H = lossScaleFactor ?? R
 *
 * seq-mean-token-sum-norm (Dr.GRPO's length-unbiased sum) divides by the constant H alone: verl
 * reads neither the number of sequences nor dp_size for it, so `globalBatchSize` and `dpSize` do
 * not change it, and micro-batch losses of one mini-batch sum to Σ over the mini-batch / H (verl's
 * engine workers do the same; its legacy dp_actor also scales each micro-batch by
 * 1 / gradient_accumulation). H defaults to R, the padded response length of the batch
 * (`loss_mask.shape[-1]`); `actor.loss_scale_factor` in verl fixes it to a constant.
 *
 * `batchNumTokens` / `globalBatchSize` let micro-batches of one mini-batch share
 * one denominator, so gradient accumulation sums to the mini-batch loss. A zero
 * denominator (nothing valid) gives loss 0 rather than NaN. verl divides
 * seq-mean-token-mean rows by `count + 1e-8`; we divide by `count` (relative
 * difference ≤ 1e-8, below f32 resolution).
 *
 * Every mode is linear in L, so the gradient is a fixed weight per token:
 * loss = Σ w[b,t]·L[b,t], `aggLossWeights` returns w = d loss / d L, which is
 * also how a fused GPU kernel can aggregate.
 *
 * @module
 */

import { checkSameLength, type Mask, rowsOf, type Vec } from "./masked.ts";

/** The aggregation modes verl supports for PPO-family losses. */
export const LOSS_AGG_MODES = [
  "token-mean",
  "seq-mean-token-sum",
  "seq-mean-token-mean",
  "seq-mean-token-sum-norm",
] as const;

/** One of `LOSS_AGG_MODES`. */
export type LossAggMode = typeof LOSS_AGG_MODES[number];

/** Shape and global-batch information for aggregation. */
export interface AggOptions {
  /** response length R; B = lossMat.length / R */
  R: number;
  /** valid tokens in the whole (mini-)batch, for token-mean; default: this mask's count */
  batchNumTokens?: number;
  /** sequences in the whole (mini-)batch, for seq-mean-*; default: this mask's non-empty rows */
  globalBatchSize?: number;
  /** data-parallel ranks whose gradients get averaged; default 1 */
  dpSize?: number;
  /** divisor H of seq-mean-token-sum-norm (verl's loss_scale_factor); default R */
  lossScaleFactor?: number;
}

/** Throws unless `mode` is a known aggregation mode, listing the valid ones. */
export function checkLossAggMode(mode: string): LossAggMode {
  if (!(LOSS_AGG_MODES as readonly string[]).includes(mode)) {
    throw new Error(`unknown loss_agg_mode "${mode}"; valid names: ${LOSS_AGG_MODES.join(", ")}`);
  }
  return mode as LossAggMode;
}

function rowCounts(mask: Mask, R: number): Float64Array {
  const B = rowsOf(mask.length, R);
  const counts = new Float64Array(B);
  for (let b = 0; b < B; b++) {
    for (let t = b * R; t < (b + 1) * R; t++) if (mask[t] !== 0) counts[b]++;
  }
  return counts;
}

/** loss = total / den · scale, where total sums rows (each divided by its count in token-mean rows). */
function denominators(mode: LossAggMode, counts: Float64Array, o: AggOptions) {
  const dp = o.dpSize ?? 1;
  if (mode === "token-mean") {
    if (o.batchNumTokens === undefined && dp > 1) {
      throw new Error("token-mean with dpSize > 1 needs the global batchNumTokens");
    }
    return { scale: dp, den: o.batchNumTokens ?? counts.reduce((a, c) => a + c, 0) };
  }
  if (mode === "seq-mean-token-sum-norm") return { scale: 1, den: o.lossScaleFactor ?? o.R };
  if (o.globalBatchSize === undefined && dp > 1) {
    throw new Error(`${mode} with dpSize > 1 needs the global globalBatchSize`);
  }
  const nonEmpty = counts.reduce((a, c) => a + (c > 0 ? 1 : 0), 0);
  return { scale: dp, den: o.globalBatchSize ?? nonEmpty };
}

/** Aggregates `lossMat [B, R]` over `mask [B, R]` with `mode` (plain loop form). */
export function aggLoss(lossMat: Vec, mask: Mask, mode: string, options: AggOptions): number {
  const m = checkLossAggMode(mode);
  checkSameLength({ lossMat, mask });
  const R = options.R, counts = rowCounts(mask, R);
  const { scale, den } = denominators(m, counts, options);
  if (den === 0) return 0;
  let total = 0;
  for (let b = 0; b < counts.length; b++) {
    if (counts[b] === 0) continue;
    let s = 0;
    for (let t = b * R; t < (b + 1) * R; t++) if (mask[t] !== 0) s += lossMat[t];
    total += m === "seq-mean-token-mean" ? s / counts[b] : s;
  }
  return (total / den) * scale;
}

/** w = d aggLoss / d lossMat, `[B, R]` (Float64Array); 0 on invalid tokens. */
export function aggLossWeights(mask: Mask, mode: string, options: AggOptions): Float64Array {
  const m = checkLossAggMode(mode);
  const R = options.R, counts = rowCounts(mask, R);
  const { scale, den } = denominators(m, counts, options);
  const w = new Float64Array(mask.length);
  if (den === 0) return w;
  for (let b = 0; b < counts.length; b++) {
    if (counts[b] === 0) continue;
    const perToken = (m === "seq-mean-token-mean" ? 1 / counts[b] : 1) * scale / den;
    for (let t = b * R; t < (b + 1) * R; t++) if (mask[t] !== 0) w[t] = perToken;
  }
  return w;
}
