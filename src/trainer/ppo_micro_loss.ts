/**
 * The losses of one PPO micro-batch on the GPU: the fused ops of src/algos (ppoPolicyLoss,
 * valueLoss) over the model's per-position outputs, with the batch's CPU arrays uploaded beside
 * them. The result is a [1] loss to call backward on and a small stats tensor; nothing is read.
 *
 * Layout: the model gives one value per position, `[n, T]` with T = P + R, and the output at
 * position P - 1 + r belongs to response token r. Rather than slicing (an op with a backward of
 * its own), the losses run over all T positions with the old log-probs, advantages, values and
 * the response mask scattered onto those positions; every other position is masked out, so it
 * reaches neither the loss nor the gradient. Every loss_agg_mode counts only masked tokens, except
 * seq-mean-token-sum-norm's horizon, which is passed as R explicitly.
 */
import {
  type LossAggMode,
  POLICY_LOSS_METRICS,
  POLICY_LOSS_STATS,
  POLICY_LOSSES,
  type PpoLossResult,
  ppoPolicyLoss,
  VALUE_LOSS_STATS,
  valueLoss,
} from "../algos/mod.ts";
import { deriveSeed, mixSeed, Tensor } from "../tensor/mod.ts";
import { type Batch, gatherRows, responseScatter } from "./batch.ts";

/** The rows of a micro-batch and the mini-batch totals its loss is aggregated against. */
export interface MicroRows {
  rows: readonly number[];
  miniRows: number; // sequences in the mini-batch (globalBatchSize)
  miniTokens: number; // valid response tokens in the mini-batch (batchNumTokens)
  responseMask: Int32Array; // [rows, R]
}

/** `actor.*` loss keys in camelCase (verl's dp_actor objective). */
export interface ActorLossConfig {
  policyLoss: string;
  clipRatio: number;
  clipRatioLow: number;
  clipRatioHigh: number;
  clipRatioC: number;
  lossAggMode: LossAggMode;
  entropyCoeff: number;
  /** actor.calculate_entropy: the entropy is computed (and reported) even at entropyCoeff 0 */
  calculateEntropy?: boolean;
  /** actor.loss_scale_factor: seq-mean-token-sum-norm's divisor; absent = R */
  lossScaleFactor?: number;
  useKlLoss: boolean;
  klLossCoef: number;
  klLossType: string;
  tauPos: number;
  tauNeg: number;
  clipCovRatio: number;
  clipCovLb: number;
  clipCovUb: number;
  klCovRatio: number;
  ppoKlCoef: number;
  /** reinforce (bypass mode): rollout_correction.rollout_is and its threshold */
  rolloutIs?: "token" | "sequence" | null;
  rolloutIsThreshold?: number;
}

/**
 * The seed of clip_cov's random token choice in the `index`-th micro-batch of an update: fixed by
 * trainer.seed and the step, so a resumed run chooses the same tokens.
 */
export function microBatchSeed(seed: number, step: number, index: number): number {
  return mixSeed(deriveSeed(seed, step, 41), index);
}

/** `[B, R]` rows of a batch array, uploaded at their positions of `[n, T]`. */
export function positioned(
  batch: Batch,
  src: Float32Array,
  rows: readonly number[],
  label: string,
): Tensor {
  const P = batch.promptLength, R = batch.responseLength, n = rows.length;
  const part = gatherRows(src, R, rows); // [n, R]
  return Tensor.from(responseScatter(part, n, P, R), [n, P + R], "f32", label);
}

/** The micro-batch's response mask at the positions that predict response tokens, `[n, T]` f32. */
export function positionedMask(batch: Batch, mb: MicroRows): Tensor {
  const P = batch.promptLength, R = batch.responseLength, n = mb.rows.length;
  const m = responseScatter(Float32Array.from(mb.responseMask), n, P, R);
  return Tensor.from(m, [n, P + R], "f32", "response_mask");
}

function required(a: Float32Array | undefined, name: string, why: string): Float32Array {
  if (!a) throw new Error(`${why} needs the batch's ${name}, which no stage has filled`);
  return a;
}

/**
 * The actor objective of one micro-batch: `logProbs` (and `entropy`) `[n, T]` from
 * logprobEntropy -> loss [1] and stats [6] in POLICY_LOSS_STATS order. `seed`: clip_cov's random
 * choice (microBatchSeed).
 */
export function actorMicroLoss(
  out: { logProbs: Tensor; entropy: Tensor | null },
  batch: Batch,
  mb: MicroRows,
  cfg: ActorLossConfig,
  seed = 0,
): PpoLossResult {
  const old = required(batch.oldLogProbs, "oldLogProbs", "update_actor");
  const adv = required(batch.advantages, "advantages", "update_actor");
  const ref = cfg.useKlLoss
    ? positioned(batch, required(batch.refLogProbs, "refLogProbs", "use_kl_loss"), mb.rows, "ref")
    : undefined;
  const { policyLoss, ...clipAndTerms } = cfg;
  return ppoPolicyLoss(
    out.logProbs,
    positioned(batch, old, mb.rows, "old_log_probs"),
    positioned(batch, adv, mb.rows, "advantages"),
    positionedMask(batch, mb),
    {
      ...clipAndTerms,
      lossMode: policyLoss,
      entropy: out.entropy ?? undefined,
      refLogProb: ref,
      batchNumTokens: mb.miniTokens,
      globalBatchSize: mb.miniRows,
      lossScaleFactor: cfg.lossScaleFactor ?? batch.responseLength,
      validTokens: mb.responseMask.reduce((a, m) => a + (m !== 0 ? 1 : 0), 0),
      seed,
    },
  );
}

const isLossMetric = (name: string) => (POLICY_LOSS_METRICS as readonly string[]).includes(name);

/** Whether the update computes the entropy: for the bonus, or for actor.calculate_entropy. */
export function withEntropy(cfg: ActorLossConfig): boolean {
  return cfg.entropyCoeff !== 0 || cfg.calculateEntropy === true;
}

/**
 * Names under which the actor reports its stats (POLICY_LOSS_STATS order); null for an entry the
 * CPU reference does not report: a metric the policy loss does not return (verl's pg_metrics),
 * the entropy without an entropy bonus, the KL loss without it.
 */
export function actorStatNames(cfg: ActorLossConfig): (string | null)[] {
  const own: readonly string[] = POLICY_LOSSES.get(cfg.policyLoss).metrics;
  return POLICY_LOSS_STATS.map((name) => {
    if (name === "actor/entropy" && !withEntropy(cfg)) return null;
    if (name === "actor/kl_loss" && !cfg.useKlLoss) return null;
    if (isLossMetric(name) && !own.includes(name)) return null;
    return name;
  });
}

/** The critic's clipped value loss of one micro-batch: `vpreds [n, T]` -> loss [1], stats [3]. */
export function criticMicroLoss(
  vpreds: Tensor,
  batch: Batch,
  mb: MicroRows,
  cfg: { cliprangeValue: number; lossAggMode: LossAggMode },
): PpoLossResult {
  const values = required(batch.values, "values", "update_critic");
  const returns = required(batch.returns, "returns", "update_critic");
  return valueLoss(
    vpreds,
    positioned(batch, values, mb.rows, "values"),
    positioned(batch, returns, mb.rows, "returns"),
    positionedMask(batch, mb),
    {
      cliprangeValue: cfg.cliprangeValue,
      lossAggMode: cfg.lossAggMode,
      batchNumTokens: mb.miniTokens,
      globalBatchSize: mb.miniRows,
      lossScaleFactor: batch.responseLength,
    },
  );
}

/** Names of the critic's stats, VALUE_LOSS_STATS order. */
export const CRITIC_STAT_NAMES: readonly string[] = VALUE_LOSS_STATS;
