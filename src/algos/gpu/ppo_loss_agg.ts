/**
 * Shared parts of the fused PPO losses: input checks and the aggregation pass
 * (shaders/ppo_loss_finish.wgsl) that turns per-row partial sums into the loss, the statistics and
 * one weight per row (verl's agg_loss; every mode is linear in the per-token loss).
 */
import { type AggOptions, checkLossAggMode, type LossAggMode } from "../agg.ts";
import { gpu, packParams } from "../../gpu/mod.ts";
import { fmtShape, Tensor } from "../../tensor/mod.ts";

export const MASK_TYPES = { f32: "f32", i32: "i32", u32: "u32" } as const;

/** Invocations of the single aggregation workgroup (shaders/ppo_loss_finish.wgsl #const WG). */
const FINISH_WG = 256;

/**
 * How the pg loss of a policy loss aggregates: a loss_agg_mode, or `row-mean`, the mean of one
 * value per row over every row (geo_mean's loss per sequence; empty rows count, as torch.mean).
 */
export type PgAggMode = LossAggMode | "row-mean";

const MODE_CODES: Record<PgAggMode, number> = {
  "token-mean": 0,
  "seq-mean-token-sum": 1,
  "seq-mean-token-mean": 2,
  "seq-mean-token-sum-norm": 3,
  "row-mean": 4,
};

/** Aggregation settings shared by the policy and value losses (see src/algos/agg.ts). */
export interface LossAggOptions extends Omit<AggOptions, "R"> {
  /** actor/critic.loss_agg_mode [token-mean] */
  lossAggMode?: LossAggMode;
}

/** Checks named [B, R] tensors: f32 floats, an f32/i32/u32 mask, one shape. Returns [B, R]. */
export function checkBatch(
  op: string,
  floats: Record<string, Tensor>,
  mask: Tensor,
): [number, number] {
  const all = { ...floats, mask };
  const desc = Object.entries(all).map(([k, t]) => `${k} ${fmtShape(t.shape)} ${t.dtype}`)
    .join(", ");
  if (Object.values(floats).some((t) => t.dtype !== "f32") || !(mask.dtype in MASK_TYPES)) {
    throw new Error(`${op}: expected f32 inputs and an f32/i32/u32 mask, got ${desc}`);
  }
  const first = Object.values(floats)[0];
  const same = (t: Tensor) =>
    t.rank === 2 && t.shape[0] === first.shape[0] && t.shape[1] === first.shape[1];
  if (!Object.values(all).every(same) || first.size === 0) {
    throw new Error(`${op}: expected non-empty inputs of one shape [B, R], got ${desc}`);
  }
  return [first.shape[0], first.shape[1]];
}

export function maskType(mask: Tensor): string {
  return MASK_TYPES[mask.dtype as keyof typeof MASK_TYPES];
}

export interface Aggregated {
  loss: Tensor; // [1]
  stats: Tensor; // [nstats]
  /** [B, 4] per row: d loss / d (token loss) under column 1's mode and under the others' mode,
   * the row's carried column 7, 0; read by the backward kernels */
  rowWeights: Tensor;
}

/** How `aggregate` turns the partial columns into statistics and the loss. */
export interface AggregateSpec {
  /** bit j set: column j is aggregated by loss_agg_mode, else reported as a token mean */
  aggBits: number;
  /** columns 1..nstats become `stats` */
  nstats: number;
  /** loss = sum_j coefs[j] stat_j over columns 1..6 (index 0 unused) */
  coefs: number[];
  /** mode of column 1 when it differs from loss_agg_mode (gspo's, sapo's, geo_mean's pg loss) */
  mode1?: PgAggMode;
}

/**
 * partials [B, 8] (count, c1..c7) -> loss = sum_j coef_j stat_j with stat_j = agg(c_j) when bit j
 * of `aggBits` is set, else the token mean of c_j; stats = stat_1..stat_nstats.
 */
export function aggregate(
  op: string,
  partials: Tensor,
  shape: [number, number],
  spec: AggregateSpec,
  options: LossAggOptions,
): Aggregated {
  const [B, R] = shape;
  const mode = checkLossAggMode(options.lossAggMode ?? "token-mean");
  const mode1: PgAggMode = spec.mode1 ?? mode;
  const dp = options.dpSize ?? 1;
  for (const m of new Set<PgAggMode>([mode, mode1])) {
    if (dp > 1 && m === "token-mean" && options.batchNumTokens === undefined) {
      throw new Error(`${op}: token-mean with dpSize > 1 needs the global batchNumTokens`);
    }
    const needsRows = m !== "token-mean" && m !== "seq-mean-token-sum-norm";
    if (dp > 1 && needsRows && options.globalBatchSize === undefined) {
      throw new Error(`${op}: ${m} with dpSize > 1 needs the global globalBatchSize`);
    }
  }
  const horizon = (m: PgAggMode) =>
    m === "seq-mean-token-sum-norm" ? options.lossScaleFactor ?? R : 1;
  const coefs = Array.from({ length: 8 }, (_, j) => ({ f32: spec.coefs[j] ?? 0 }));
  const loss = Tensor.empty([1], "f32", `${op}.loss`);
  const stats = Tensor.empty([spec.nstats], "f32", `${op}.stats`);
  const rowWeights = Tensor.empty([B, 4], "f32", `${op}.row_weights`);
  gpu().dispatch({ shader: "ppo_loss_finish", defines: { WG: FINISH_WG } }, {
    params: packParams([
      B,
      MODE_CODES[mode],
      spec.aggBits,
      spec.nstats,
      { f32: options.batchNumTokens ?? -1 },
      { f32: options.globalBatchSize ?? -1 },
      { f32: dp },
      { f32: horizon(mode) },
      MODE_CODES[mode1],
      { f32: horizon(mode1) },
      0,
      0,
      ...coefs,
    ]),
    buffers: [partials.buffer, loss.buffer, stats.buffer, rowWeights.buffer],
    workgroups: [1],
  });
  return { loss, stats, rowWeights };
}
