/**
 * The controller's typed batch: per-sample fields and `[B, *]` arrays held on the CPU between
 * stages (each stage uploads what it needs in micro-batches). B = prompts x rollout.n samples,
 * P = prompt tokens (left-padded), R = response tokens (right-padded).
 *
 * Each stage adds the fields it makes, so the type of a batch says which stages it went through:
 * gen -> GenBatch, reward -> ScoredBatch, old_log_prob -> LogProbBatch, ref -> RefBatch,
 * values -> ValuedBatch, adv -> AdvBatch. Fields of a stage that the run does not use (ref without
 * a KL term, values without a critic) are present and undefined.
 */

import type { ChatMessage } from "../io/mod.ts";

/** After gen: the prompts, their samples and the sampled responses. */
export interface GenBatch {
  size: number; // B
  promptLength: number; // P
  responseLength: number; // R
  uid: string[]; // [B] one per prompt, shared by its n samples
  dataSource: string[]; // [B]
  groundTruth: string[]; // [B]
  extraInfo: Record<string, unknown>[]; // [B]
  prompts: Int32Array; // [B, P] left-padded ids
  promptMask: Int32Array; // [B, P] 1 = real prompt token
  responses: Int32Array; // [B, R] right-padded ids
  responseMask: Int32Array; // [B, R] 1 = token the policy generated
  rolloutLogProbs?: Float32Array; // [B, R] log-probs under the sampling distribution
  rewardBaselines?: Float32Array; // [B] reward of the prompt's greedy response (remax)
  /** [B] multi-turn samples: the whole conversation with roles (prompt, assistant, tool). */
  conversations?: ChatMessage[][];
  /** The agent loop's metrics (num_turns/*, tool_calls/*) for the step's log. */
  rolloutMetrics?: Record<string, number>;
}

/** After reward. */
export interface ScoredBatch extends GenBatch {
  tokenLevelScores: Float32Array; // [B, R] score at the last valid response token
  responseTexts: string[]; // [B] decoded responses
  rewardExtraInfo: Record<string, (number | string | null)[]>; // column -> [B]
}

/** After old_log_prob. */
export interface LogProbBatch extends ScoredBatch {
  oldLogProbs: Float32Array; // [B, R]
  entropys: Float32Array | undefined; // [B, R]
  /** Σ_v π_old(v)² per response position; undefined unless the estimator reads it */
  sumPiSquared: Float32Array | undefined; // [B, R]
}

/** After ref (undefined when no KL term uses the reference). */
export interface RefBatch extends LogProbBatch {
  refLogProbs: Float32Array | undefined; // [B, R]
}

/** After values (undefined without a critic). */
export interface ValuedBatch extends RefBatch {
  values: Float32Array | undefined; // [B, R]
}

/** After adv: everything the updates need. */
export interface AdvBatch extends ValuedBatch {
  tokenLevelRewards: Float32Array; // [B, R] scores minus beta * KL when use_kl_in_reward
  advantages: Float32Array; // [B, R]
  returns: Float32Array; // [B, R]
}

/** A batch at any stage: the fields of later stages may be missing. */
export type Batch = GenBatch & Partial<Omit<AdvBatch, keyof GenBatch>>;

/** Model inputs for prompt + response: `[B, P + R]` ids, mask and positions. */
export interface SequenceInputs {
  rows: number;
  length: number; // T = P + R
  inputIds: Int32Array; // [rows, T]
  attentionMask: Int32Array; // [rows, T]
  positionIds: Int32Array; // [rows, T] cumsum(mask) - 1, clamped at 0
  /** For the logits at position t: the next token id where t + 1 is a response position, else -100. */
  targets: Int32Array; // [rows, T]
}

/**
 * Response positions of row `b` the model sees: every token up to the last one the policy wrote,
 * so tool replies between a conversation's turns (response mask 0: never trained on) are still
 * attended to and counted in positions, as verl's attention_mask keeps them.
 */
export function responseAttention(responseMask: Int32Array, R: number, b: number): Int32Array {
  const row = responseMask.subarray(b * R, b * R + R);
  const out = new Int32Array(R); // [R]
  return out.fill(1, 0, row.findLastIndex((m) => m !== 0) + 1);
}

/**
 * Joins prompts and responses of the given rows into one sequence each. The logits at position
 * P - 1 + r predict response token r, so `targets` marks exactly those positions.
 */
export function sequenceInputs(batch: GenBatch, rows: readonly number[]): SequenceInputs {
  const P = batch.promptLength, R = batch.responseLength, T = P + R;
  const n = rows.length;
  const inputIds = new Int32Array(n * T), attentionMask = new Int32Array(n * T);
  const positionIds = new Int32Array(n * T), targets = new Int32Array(n * T).fill(-100);
  rows.forEach((b, i) => {
    inputIds.set(batch.prompts.subarray(b * P, b * P + P), i * T);
    attentionMask.set(batch.promptMask.subarray(b * P, b * P + P), i * T);
    inputIds.set(batch.responses.subarray(b * R, b * R + R), i * T + P);
    attentionMask.set(responseAttention(batch.responseMask, R, b), i * T + P);
    let pos = -1;
    for (let t = 0; t < T; t++) {
      pos += attentionMask[i * T + t];
      positionIds[i * T + t] = Math.max(0, pos);
    }
    for (let r = 0; r < R; r++) {
      if (batch.responseMask[b * R + r]) targets[i * T + P - 1 + r] = batch.responses[b * R + r];
    }
  });
  return { rows: n, length: T, inputIds, attentionMask, positionIds, targets };
}

/** Picks rows [rows] x R out of a full [B, R] array. */
export function gatherRows(src: Float32Array, R: number, rows: readonly number[]): Float32Array {
  const out = new Float32Array(rows.length * R);
  rows.forEach((b, i) => out.set(src.subarray(b * R, b * R + R), i * R));
  return out;
}

/** Picks the response slice out of per-position values `[rows, T]` -> `[rows, R]`. */
export function responseSlice(
  full: Float32Array,
  rows: number,
  P: number,
  R: number,
): Float32Array {
  const T = P + R;
  const out = new Float32Array(rows * R);
  for (let i = 0; i < rows; i++) out.set(full.subarray(i * T + P - 1, i * T + P - 1 + R), i * R);
  return out;
}

/** Spreads `[rows, R]` values back to per-position `[rows, T]` (zeros elsewhere). */
export function responseScatter(
  part: Float32Array,
  rows: number,
  P: number,
  R: number,
): Float32Array {
  const T = P + R;
  const out = new Float32Array(rows * T);
  for (let i = 0; i < rows; i++) out.set(part.subarray(i * R, i * R + R), i * T + P - 1);
  return out;
}

/** Writes `[rows, R]` values into a full `[B, R]` array at the given rows. */
export function scatterRows(
  dst: Float32Array,
  part: Float32Array,
  R: number,
  rows: readonly number[],
): void {
  rows.forEach((b, i) => dst.set(part.subarray(i * R, i * R + R), b * R));
}

/** Splits 0..n-1 into consecutive chunks of `size` (the last may be shorter). */
export function chunks(indices: readonly number[], size: number): number[][] {
  const out: number[][] = [];
  for (let i = 0; i < indices.length; i += size) out.push(indices.slice(i, i + size));
  return out;
}

export function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

/** Rows of an array of `width` values per sample. */
function pickRows<T extends Int32Array | Float32Array>(
  src: T,
  width: number,
  rows: readonly number[],
): T {
  const out = new (src.constructor as new (n: number) => T)(rows.length * width);
  rows.forEach((b, i) => out.set(src.subarray(b * width, b * width + width), i * width));
  return out;
}

/** The given samples of a scored batch, in that order (every per-sample field). */
export function takeRows(batch: ScoredBatch, rows: readonly number[]): ScoredBatch {
  const P = batch.promptLength, R = batch.responseLength;
  const pick = <T>(xs: readonly T[]) => rows.map((b) => xs[b]);
  return {
    size: rows.length,
    promptLength: P,
    responseLength: R,
    uid: pick(batch.uid),
    dataSource: pick(batch.dataSource),
    groundTruth: pick(batch.groundTruth),
    extraInfo: pick(batch.extraInfo),
    prompts: pickRows(batch.prompts, P, rows),
    promptMask: pickRows(batch.promptMask, P, rows),
    responses: pickRows(batch.responses, R, rows),
    responseMask: pickRows(batch.responseMask, R, rows),
    rolloutLogProbs: batch.rolloutLogProbs && pickRows(batch.rolloutLogProbs, R, rows),
    rewardBaselines: batch.rewardBaselines && pickRows(batch.rewardBaselines, 1, rows),
    tokenLevelScores: pickRows(batch.tokenLevelScores, R, rows),
    responseTexts: pick(batch.responseTexts),
    rewardExtraInfo: Object.fromEntries(
      Object.entries(batch.rewardExtraInfo).map(([k, v]) => [k, pick(v)]),
    ),
  };
}

/** Left-pads `[B, P]` prompt ids (or mask) to `[B, P2]`, P2 >= P, with `fill`. */
function leftPad(src: Int32Array, B: number, P: number, P2: number, fill: number): Int32Array {
  const out = new Int32Array(B * P2).fill(fill);
  for (let b = 0; b < B; b++) out.set(src.subarray(b * P, b * P + P), b * P2 + P2 - P);
  return out;
}

/**
 * Two scored batches as one: prompts re-padded on the left to the longer prompt length, the
 * responses (both `data.max_response_length` wide) stacked; an optional field or extra-info column
 * that only one side has is dropped / filled with null.
 */
export function concatBatches(a: ScoredBatch, b: ScoredBatch, padTokenId: number): ScoredBatch {
  if (a.responseLength !== b.responseLength) {
    throw new Error(
      `cannot join batches of response length ${a.responseLength} and ${b.responseLength}`,
    );
  }
  const P = Math.max(a.promptLength, b.promptLength);
  const ints = (x: Int32Array, y: Int32Array) => {
    const out = new Int32Array(x.length + y.length);
    out.set(x);
    out.set(y, x.length);
    return out;
  };
  const floats = (x: Float32Array | undefined, y: Float32Array | undefined) => {
    if (!x || !y) return undefined;
    const out = new Float32Array(x.length + y.length);
    out.set(x);
    out.set(y, x.length);
    return out;
  };
  const padded = (s: ScoredBatch, mask: boolean) =>
    leftPad(mask ? s.promptMask : s.prompts, s.size, s.promptLength, P, mask ? 0 : padTokenId);
  const columns = new Set([...Object.keys(a.rewardExtraInfo), ...Object.keys(b.rewardExtraInfo)]);
  const column = (s: ScoredBatch, k: string) => s.rewardExtraInfo[k] ?? Array(s.size).fill(null);
  return {
    size: a.size + b.size,
    promptLength: P,
    responseLength: a.responseLength,
    uid: [...a.uid, ...b.uid],
    dataSource: [...a.dataSource, ...b.dataSource],
    groundTruth: [...a.groundTruth, ...b.groundTruth],
    extraInfo: [...a.extraInfo, ...b.extraInfo],
    prompts: ints(padded(a, false), padded(b, false)),
    promptMask: ints(padded(a, true), padded(b, true)),
    responses: ints(a.responses, b.responses),
    responseMask: ints(a.responseMask, b.responseMask),
    rolloutLogProbs: floats(a.rolloutLogProbs, b.rolloutLogProbs),
    rewardBaselines: floats(a.rewardBaselines, b.rewardBaselines),
    tokenLevelScores: floats(a.tokenLevelScores, b.tokenLevelScores)!,
    responseTexts: [...a.responseTexts, ...b.responseTexts],
    rewardExtraInfo: Object.fromEntries(
      [...columns].map((k) => [k, [...column(a, k), ...column(b, k)]]),
    ),
  };
}
