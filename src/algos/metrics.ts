/**
 * Batch statistics the trainer logs under verl's metric names
 * (`metric_utils.compute_data_metrics`), from typed arrays.
 *
 * @module
 */

import { sequenceScores } from "./group.ts";
import { checkSameLength, type Mask, maskedMean, rowsOf, type Vec } from "./masked.ts";

/** Inputs of `computeDataMetrics`. `[B, R]` unless noted. */
export interface DataMetricsInputs {
  R: number;
  tokenLevelScores: Vec;
  tokenLevelRewards: Vec;
  advantages: Vec;
  returns: Vec;
  /** critic values; their metrics and vf_explained_var appear only when given */
  values?: Vec;
  /** policy tokens: selects the tokens of the advantage/return/value statistics */
  responseMask: Mask;
  /**
   * `[B, P + R]` attention mask of prompt + response: prompt and response lengths are
   * counted from it (the response part includes tool/user tokens, as in verl).
   */
  attentionMask: Mask;
}

function stats(xs: number[]): { mean: number; max: number; min: number } {
  // An empty selection logs zeros rather than NaN/±Infinity.
  if (xs.length === 0) return { mean: 0, max: 0, min: 0 };
  let s = 0, max = -Infinity, min = Infinity;
  for (const x of xs) (s += x, max = Math.max(max, x), min = Math.min(min, x));
  return { mean: s / xs.length, max, min };
}

function selected(x: Vec, mask: Mask): number[] {
  const out: number[] = [];
  for (let i = 0; i < x.length; i++) if (mask[i] !== 0) out.push(x[i]);
  return out;
}

function varUnbiased(xs: number[]): number {
  const n = xs.length, mean = xs.reduce((a, b) => a + b, 0) / n;
  return xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1);
}

/**
 * Explained variance of the critic over valid tokens:
 * 1 - Var(returns - values) / (Var(returns) + 1e-5), unbiased variances (torch.var).
 * Fewer than 2 valid tokens give 0 (torch would give NaN).
 */
export function explainedVariance(returns: Vec, values: Vec, mask: Mask): number {
  checkSameLength({ returns, values, mask });
  const ret = selected(returns, mask);
  if (ret.length < 2) return 0;
  const diff: number[] = [];
  for (let i = 0, k = 0; i < returns.length; i++) {
    if (mask[i] !== 0) diff.push(ret[k++] - values[i]);
  }
  return 1 - varUnbiased(diff) / (varUnbiased(ret) + 1e-5);
}

/** Approximate KL of the update, mean over valid tokens of (oldLogProb - logProb). */
export function approxKl(logProb: Vec, oldLogProb: Vec, mask: Mask): number {
  checkSameLength({ logProb, oldLogProb, mask });
  const d = new Float64Array(logProb.length);
  for (let i = 0; i < d.length; i++) d[i] = mask[i] !== 0 ? oldLogProb[i] - logProb[i] : 0;
  return maskedMean(d, mask);
}

/**
 * verl's data metrics:
 * - critic/score/*, critic/rewards/*: per-sequence Σ_t of scores / rewards over
 *   non-aborted samples (response length > 0)
 * - critic/advantages|returns|values/{mean,max,min} over valid response tokens
 * - critic/vf_explained_var (with values)
 * - response_length/{mean,max,min,clip_ratio} (clip_ratio: share with length == R),
 *   response_length_non_aborted/*, response/aborted_ratio
 * - prompt_length/{mean,max,min,clip_ratio} (clip_ratio: share with length == P)
 * Throws when every sample is aborted, as verl does.
 */
export function computeDataMetrics(inputs: DataMetricsInputs): Record<string, number> {
  const { R, responseMask: mask, attentionMask: attn } = inputs;
  checkSameLength({
    tokenLevelScores: inputs.tokenLevelScores,
    tokenLevelRewards: inputs.tokenLevelRewards,
    advantages: inputs.advantages,
    returns: inputs.returns,
    responseMask: mask,
  });
  const B = rowsOf(mask.length, R);
  const T = attn.length / B, P = T - R;
  if (!Number.isInteger(T) || P < 0) {
    throw new Error(`attentionMask of length ${attn.length} is not [B = ${B}, P + R = P + ${R}]`);
  }
  const promptLen: number[] = [], respLen: number[] = [];
  for (let b = 0; b < B; b++) {
    let p = 0, r = 0;
    for (let j = 0; j < T; j++) if (attn[b * T + j] !== 0) j < P ? p++ : r++;
    promptLen.push(p), respLen.push(r);
  }
  const live = respLen.map((l) => l > 0);
  if (!live.some((x) => x)) throw new Error("all samples are aborted (response length 0)");
  const score = [...sequenceScores(inputs.tokenLevelScores, R)].filter((_, b) => live[b]);
  const reward = [...sequenceScores(inputs.tokenLevelRewards, R)].filter((_, b) => live[b]);
  const liveLen = respLen.filter((_, b) => live[b]);
  const share = (xs: number[], v: number) => xs.filter((x) => x === v).length / xs.length;
  const out: Record<string, number> = {};
  const put = (prefix: string, s: { mean: number; max: number; min: number }) => {
    out[`${prefix}/mean`] = s.mean, out[`${prefix}/max`] = s.max, out[`${prefix}/min`] = s.min;
  };
  put("critic/score", stats(score));
  put("critic/rewards", stats(reward));
  put("critic/advantages", stats(selected(inputs.advantages, mask)));
  put("critic/returns", stats(selected(inputs.returns, mask)));
  if (inputs.values !== undefined) {
    checkSameLength({ values: inputs.values, responseMask: mask });
    put("critic/values", stats(selected(inputs.values, mask)));
    out["critic/vf_explained_var"] = explainedVariance(inputs.returns, inputs.values, mask);
  }
  put("response_length", stats(respLen));
  out["response_length/clip_ratio"] = share(respLen, R);
  put("response_length_non_aborted", stats(liveLen));
  out["response_length_non_aborted/clip_ratio"] = share(liveLen, R);
  out["response/aborted_ratio"] = 1 - liveLen.length / B;
  put("prompt_length", stats(promptLen));
  out["prompt_length/clip_ratio"] = share(promptLen, P);
  return out;
}

/**
 * How far the sampler's token probabilities are from the recomputed ones (verl's
 * `rollout.calculate_log_probs` debug metrics): |exp(rollout) - exp(old)| over the response
 * tokens, its max, mean and (unbiased) std, and the Pearson correlation of the two probabilities.
 * rolloutLogProbs, oldLogProbs, mask: [B, R]
 */
export function rolloutProbsDiff(rolloutLogProbs: Vec, oldLogProbs: Vec, mask: Mask) {
  checkSameLength({ rolloutLogProbs, oldLogProbs, mask });
  const a: number[] = [], b: number[] = [];
  for (let i = 0; i < mask.length; i++) {
    if (mask[i]) a.push(Math.exp(rolloutLogProbs[i])), b.push(Math.exp(oldLogProbs[i]));
  }
  const n = a.length;
  if (n === 0) return {};
  const diff = a.map((x, i) => Math.abs(x - b[i]));
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const md = mean(diff), ma = mean(a), mb = mean(b);
  let sdd = 0, sab = 0, saa = 0, sbb = 0;
  for (let i = 0; i < n; i++) {
    sdd += (diff[i] - md) ** 2;
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) ** 2;
    sbb += (b[i] - mb) ** 2;
  }
  return {
    "training/rollout_probs_diff_max": Math.max(...diff),
    "training/rollout_probs_diff_mean": md,
    "training/rollout_probs_diff_std": n > 1 ? Math.sqrt(sdd / (n - 1)) : 0,
    "training/rollout_actor_probs_pearson_corr": saa > 0 && sbb > 0
      ? sab / Math.sqrt(saa * sbb)
      : 1,
  };
}
