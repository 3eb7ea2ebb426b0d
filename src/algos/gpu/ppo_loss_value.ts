/**
 * Fused clipped value loss of the critic (shaders/ppo_loss_value.wgsl), verl's compute_value_loss
 * (src/algos/value_loss.ts is the reference): loss [1] with a backward into the predictions, and
 * the statistics in a [3] tensor.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { record, registerOp } from "../../tensor/mod.ts";
import { Tensor } from "../../tensor/mod.ts";
import { grid1d } from "../../tensor/mod.ts";
import type { PpoLossResult } from "./ppo_loss.ts";
import { aggregate, checkBatch, type LossAggOptions, maskType } from "./ppo_loss_agg.ts";

const WG = 128; // invocations per workgroup, passed to shaders/ppo_loss_value.wgsl as #const WG

registerOp(
  "value_loss",
  "vpreds, values, returns [B, R] f32, mask [B, R] -> 0.5 agg(max((v - R)^2, (clip(v, old +- c) - " +
    "R)^2)) [1]; backward into vpreds",
);

/** Names of the entries of `stats`, in order (verl's metric names). */
export const VALUE_LOSS_STATS = [
  "critic/vf_loss",
  "critic/vf_clipfrac",
  "critic/vpred_mean",
] as const;

/** `critic.*` keys in camelCase, verl's defaults in brackets. */
export interface ValueLossOptions extends LossAggOptions {
  /** critic.cliprange_value [0.5] */
  cliprangeValue?: number;
}

/** vpreds [B, R] (current critic), values [B, R] (rollout-time critic), returns, mask. */
export function valueLoss(
  vpreds: Tensor,
  values: Tensor,
  returns: Tensor,
  responseMask: Tensor,
  options: ValueLossOptions = {},
): PpoLossResult {
  const [B, R] = checkBatch("valueLoss", { vpreds, values, returns }, responseMask);
  const params = packParams([B, R, { f32: options.cliprangeValue ?? 0.5 }, 0]);
  const defines = { MaskT: maskType(responseMask), WG };
  const g = gpu();
  const partials = Tensor.empty([B, 8], "f32", "value_loss.partials");
  g.dispatch({ shader: "ppo_loss_value", entry: "value_rows", defines }, {
    params,
    buffers: [vpreds.buffer, values.buffer, returns.buffer, responseMask.buffer, partials.buffer],
    workgroups: grid1d(B, 1),
  });
  // columns: 1 half squared error (agg), 2 clipped, 3 vpred (token means)
  const agg = aggregate("valueLoss", partials, [B, R], {
    aggBits: 0b10,
    nstats: 3,
    coefs: [0, 1],
  }, options);
  partials.dispose();
  record("value_loss", [vpreds], agg.loss, (gLoss) => {
    const gv = Tensor.empty([B, R], "f32", "value_loss.dvpreds");
    g.dispatch({ shader: "ppo_loss_value", entry: "value_grad", defines }, {
      params,
      buffers: [
        vpreds.buffer,
        values.buffer,
        returns.buffer,
        responseMask.buffer,
        agg.rowWeights.buffer,
        gLoss.buffer,
        gv.buffer,
      ],
      workgroups: grid1d(B * R, WG),
    });
    agg.rowWeights.dispose();
    return [gv];
  });
  if (!agg.loss.node) agg.rowWeights.dispose();
  return { loss: agg.loss, stats: agg.stats };
}
