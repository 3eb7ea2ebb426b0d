/**
 * The fixed inputs of the update parity check (test/update_parity.ts): its hyper-parameters, and a
 * batch of 8 rows of left-padded prompts and right-padded responses of different lengths (one row
 * all padding, one with a masked tool token inside), advantages, and old log-probs / old values
 * placed around the model's own so that every clip branch is taken while no token sits within
 * rounding of a clip boundary (there the two implementations could take different branches, which
 * says nothing about either).
 */
import { mulberry32 } from "../src/tensor/mod.ts";
import { loadConfig } from "../src/config/mod.ts";
import {
  actorLossOptions,
  type ActorUpdateOptions,
  type AdvBatch,
  type GenBatch,
  type SequenceInputs,
  sequenceInputs,
} from "../src/trainer/mod.ts";

/** verl's optim keys; lr large enough that one step moves every weight visibly. */
export const PARITY_OPTIM = { lr: 1e-3, betas: [0.9, 0.999], weight_decay: 0.01, eps: 1e-8 };
export const LOOP = {
  ppoEpochs: 1,
  miniBatchSize: 8, // the whole batch: one mini-batch, one optimizer step
  microBatchSize: 3, // micro-batches of 3, 3, 2 rows: accumulation with unequal parts
  shuffle: false,
  seed: 1,
  step: 1,
  lr: PARITY_OPTIM.lr,
  gradClip: 1.0,
};
/** verl's actor-loss defaults (the config schema's). */
const BASE_LOSS: ActorUpdateOptions["loss"] = actorLossOptions(
  loadConfig("ppo_trainer", { skipPathChecks: true }),
);
export const ACTOR_CASES = {
  vanilla: { ...BASE_LOSS },
  gspo: {
    ...BASE_LOSS,
    policyLoss: "gspo",
    lossAggMode: "seq-mean-token-mean",
    clipRatioLow: 3e-4,
    clipRatioHigh: 4e-4,
  },
} satisfies Record<string, ActorUpdateOptions["loss"]>;
export const CRITIC_CASE = { cliprangeValue: 0.5, lossAggMode: "token-mean" } as const;

export interface ParityInputs {
  batch: GenBatch;
  sequences: SequenceInputs; // what the model sees: [B, P + R] ids, mask, positions
  advantages: Float32Array; // [B, R], 0 off the response
}

/** Left padding of each prompt and the share of R each response fills (row 6: none). */
const PROMPT_PAD = [0, 2, 4, 0, 1, 3, 0, 5];
const RESPONSE_SHARE = [1, 0.7, 0.3, 1, 0.1, 0.5, 0, 0.8];
/** Row 7's third response token is a tool reply: attended to, not trained on. */
const HOLE = { row: 7, at: 2 };
/** GSPO: each row's mean log-ratio; the clip range is (log(1 - 3e-4), log(1 + 4e-4)). */
const SEQUENCE_LOG_RATIO = [0, 1e-4, -1e-4, 1e-3, -1e-3, 2e-4, 0, -6e-4];
/** How far a drawn log-ratio or value offset stays from a clip boundary. */
const MARGIN = 0.02;

export function parityBatch(vocab: number, o: { B: number; P: number; R: number }): ParityInputs {
  const { B, P, R } = o;
  if (B !== PROMPT_PAD.length) throw new Error(`the parity batch has ${PROMPT_PAD.length} rows`);
  const r = mulberry32(11);
  const token = () => 3 + Math.floor(r() * (vocab - 3));
  const prompts = new Int32Array(B * P), promptMask = new Int32Array(B * P);
  const responses = new Int32Array(B * R), responseMask = new Int32Array(B * R);
  const advantages = new Float32Array(B * R);
  for (let b = 0; b < B; b++) {
    for (let p = Math.min(PROMPT_PAD[b], P - 1); p < P; p++) {
      prompts[b * P + p] = token();
      promptMask[b * P + p] = 1;
    }
    const len = Math.round(RESPONSE_SHARE[b] * R);
    for (let t = 0; t < len; t++) {
      responses[b * R + t] = token();
      const hole = b === HOLE.row && t === HOLE.at;
      responseMask[b * R + t] = hole ? 0 : 1;
      if (!hole) advantages[b * R + t] = (r() * 2 - 1) * 2;
    }
  }
  const none = Array<string>(B).fill("");
  const batch: GenBatch = {
    size: B,
    promptLength: P,
    responseLength: R,
    uid: none.map((_, b) => `row${b}`),
    dataSource: none,
    groundTruth: none,
    extraInfo: none.map(() => ({})),
    prompts,
    promptMask,
    responses,
    responseMask,
  };
  const rows = Array.from({ length: B }, (_, b) => b);
  return { batch, sequences: sequenceInputs(batch, rows), advantages };
}

/** A uniform draw from [-w, w] at least MARGIN away from every value of `avoid`. */
function awayFrom(r: () => number, w: number, avoid: readonly number[]): number {
  for (;;) {
    const x = (r() * 2 - 1) * w;
    if (avoid.every((a) => Math.abs(x - a) > MARGIN)) return x;
  }
}

function advBatch(inputs: ParityInputs, extra: Partial<AdvBatch>): AdvBatch {
  const n = inputs.batch.size * inputs.batch.responseLength;
  return {
    ...inputs.batch,
    tokenLevelScores: new Float32Array(n),
    responseTexts: [],
    rewardExtraInfo: {},
    oldLogProbs: new Float32Array(n),
    entropys: undefined,
    sumPiSquared: undefined,
    refLogProbs: undefined,
    values: undefined,
    tokenLevelRewards: new Float32Array(n),
    advantages: inputs.advantages,
    returns: new Float32Array(n),
    ...extra,
  };
}

/**
 * Old log-probs around ours (`logProbs` [B, R]). Per token (vanilla): log-ratios log π - log π_old
 * in [-1.5, 1.5], away from the log-ratios in `avoid` (the clip boundaries). Per sequence (GSPO):
 * each row's mean log-ratio from SEQUENCE_LOG_RATIO, with zero-mean per-token noise on top.
 */
export function withOldLogProbs(
  inputs: ParityInputs,
  logProbs: Float32Array,
  o: { sequence: boolean; avoid: readonly number[] },
): AdvBatch {
  const { size: B, responseLength: R, responseMask } = inputs.batch;
  const r = mulberry32(o.sequence ? 22 : 21);
  const ratio = new Float64Array(B * R); // log π - log π_old
  for (let b = 0; b < B; b++) {
    const valid = [];
    for (let t = 0; t < R; t++) if (responseMask[b * R + t]) valid.push(b * R + t);
    for (const i of valid) ratio[i] = o.sequence ? (r() * 2 - 1) * 0.3 : awayFrom(r, 1.5, o.avoid);
    if (o.sequence && valid.length) {
      const mean = valid.reduce((s, i) => s + ratio[i], 0) / valid.length;
      for (const i of valid) ratio[i] += SEQUENCE_LOG_RATIO[b] - mean;
    }
  }
  const old = new Float32Array(B * R);
  for (let i = 0; i < old.length; i++) if (responseMask[i]) old[i] = logProbs[i] - ratio[i];
  return advBatch(inputs, { oldLogProbs: old });
}

/**
 * Old values within [-0.8, 0.8] of our predictions `vpreds` [B, R] (away from the clip range's
 * ends at ±`clip`), and returns within 1.5 of them, redrawn where the clipped and unclipped
 * squared errors are within 1e-3 of each other.
 */
export function withOldValues(inputs: ParityInputs, vpreds: Float32Array, clip: number): AdvBatch {
  const mask = inputs.batch.responseMask;
  const r = mulberry32(23);
  const values = new Float32Array(mask.length), returns = new Float32Array(mask.length);
  for (let i = 0; i < mask.length; i++) {
    if (!mask[i]) continue;
    const v = vpreds[i];
    values[i] = v + awayFrom(r, 0.8, [-clip, clip]);
    const vClip = Math.min(Math.max(v, values[i] - clip), values[i] + clip);
    do returns[i] = v + (r() * 2 - 1) * 1.5; while (
      vClip !== v && Math.abs((v - returns[i]) ** 2 - (vClip - returns[i]) ** 2) < 1e-3
    );
  }
  return advBatch(inputs, { values, returns });
}
