/**
 * Per-sample outcome scores and per-`uid` group statistics, the shared core of
 * the group-baseline estimators (grpo, rloo, opo, gpg, reinforce++ baseline).
 *
 * `groupStats` is the single-pass ("vectorised": one accumulation per sample,
 * like a bincount) form; `groupStatsReference` is the plain dict-of-lists loop
 * verl writes. Both follow verl's rule for a group of one: mean 0, std 1.
 *
 * @module
 */

import { type Mask, rowsOf, stdUnbiased, type Vec } from "./masked.ts";

/** Dense group ids: `groupOf[i]` in [0, count), numbered by first appearance. */
export interface GroupIndex {
  groupOf: Int32Array;
  count: number;
}

/** Maps each sample's `uid` to a dense group id. */
export function groupIndex(uids: readonly string[]): GroupIndex {
  const ids = new Map<string, number>();
  const groupOf = new Int32Array(uids.length);
  for (let i = 0; i < uids.length; i++) {
    let g = ids.get(uids[i]);
    if (g === undefined) ids.set(uids[i], g = ids.size);
    groupOf[i] = g;
  }
  return { groupOf, count: ids.size };
}

/** score_b = Σ_t tokenLevelRewards[b, t] (all positions, as verl's `.sum(-1)`) -> [B]. */
export function sequenceScores(tokenLevelRewards: Vec, R: number): Float64Array {
  const B = rowsOf(tokenLevelRewards.length, R);
  const out = new Float64Array(B);
  for (let b = 0; b < B; b++) {
    let s = 0;
    for (let t = b * R; t < (b + 1) * R; t++) s += tokenLevelRewards[t];
    out[b] = s;
  }
  return out;
}

/** Valid-token count per row: len_b = Σ_t mask[b, t] -> [B]. */
export function sequenceLengths(mask: Mask, R: number): Float64Array {
  const B = rowsOf(mask.length, R);
  const out = new Float64Array(B);
  for (let b = 0; b < B; b++) {
    let n = 0;
    for (let t = b * R; t < (b + 1) * R; t++) if (mask[t] !== 0) n++;
    out[b] = n;
  }
  return out;
}

/** Per-sample view of its group's statistics, each `[B]`. */
export interface GroupStats {
  /** group mean, 0 for a group of one */
  mean: Float64Array;
  /** unbiased group std, 1 for a group of one */
  std: Float64Array;
  /** group size */
  size: Float64Array;
}

/**
 * Group mean / unbiased std of `scores [B]` by `uids [B]`, broadcast back to
 * samples. mean_g = Σ_{i∈g} s_i / n_g; std_g = sqrt(Σ (s_i - mean_g)^2 / (n_g - 1)).
 */
export function groupStats(scores: Float64Array, uids: readonly string[]): GroupStats {
  if (uids.length !== scores.length) {
    throw new Error(`uids has length ${uids.length}, expected B = ${scores.length}`);
  }
  const { groupOf, count } = groupIndex(uids);
  const sum = new Float64Array(count), n = new Float64Array(count), ss = new Float64Array(count);
  for (let i = 0; i < scores.length; i++) (sum[groupOf[i]] += scores[i], n[groupOf[i]]++);
  for (let g = 0; g < count; g++) sum[g] /= n[g]; // now the mean
  for (let i = 0; i < scores.length; i++) ss[groupOf[i]] += (scores[i] - sum[groupOf[i]]) ** 2;
  const B = scores.length;
  const out = { mean: new Float64Array(B), std: new Float64Array(B), size: new Float64Array(B) };
  for (let i = 0; i < B; i++) {
    const g = groupOf[i];
    out.size[i] = n[g];
    out.mean[i] = n[g] === 1 ? 0 : sum[g];
    out.std[i] = n[g] === 1 ? 1 : Math.sqrt(ss[g] / (n[g] - 1));
  }
  return out;
}

/** Plain reference for `groupStats`: collect lists per uid, then reduce each list. */
export function groupStatsReference(scores: Float64Array, uids: readonly string[]): GroupStats {
  const lists = new Map<string, number[]>();
  uids.forEach((u, i) => lists.set(u, [...(lists.get(u) ?? []), scores[i]]));
  const B = scores.length;
  const out = { mean: new Float64Array(B), std: new Float64Array(B), size: new Float64Array(B) };
  for (let i = 0; i < B; i++) {
    const xs = lists.get(uids[i])!;
    out.size[i] = xs.length;
    out.mean[i] = xs.length === 1 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
    out.std[i] = xs.length === 1 ? 1 : stdUnbiased(xs);
  }
  return out;
}

/** adv[b, t] = scalar_b · mask[b, t]: broadcasts a per-sample scalar over its tokens. */
export function broadcastToTokens(scalar: Float64Array, mask: Mask, R: number, out: Vec): Vec {
  for (let b = 0; b < scalar.length; b++) {
    for (let t = b * R; t < (b + 1) * R; t++) out[t] = mask[t] !== 0 ? scalar[b] : 0;
  }
  return out;
}
