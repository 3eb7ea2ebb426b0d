/**
 * The critic: values of the response positions and the clipped value-loss update. Like the
 * actor's, the loss is a fused GPU op of src/algos (valueLoss, via ppo_micro_loss.ts) whose
 * gradient w.r.t. the predicted values is back-propagated without a readback; computeValueLoss is
 * its CPU reference, for tests.
 */
import type { LossAggMode } from "../algos/mod.ts";
import { gpu } from "../gpu/mod.ts";
import type { Packing } from "../nn/mod.ts";
import { noGrad, scope, type Tensor } from "../tensor/mod.ts";
import { type TrainableModel, uploadSequences } from "./actor.ts";
import { type Batch, range, responseSlice } from "./batch.ts";
import { microBatches, type MicroBatching } from "./dynamic_bsz.ts";
import { type Optimizer, scaledBackward, stepMetrics } from "./optimizer_step.ts";
import { updateLoop, type UpdateLoopOptions } from "./minibatch.ts";
import { CRITIC_STAT_NAMES, criticMicroLoss } from "./ppo_micro_loss.ts";

export interface ValueModel extends TrainableModel {
  forward(
    inputIds: Tensor,
    options: { positionIds: Tensor; attentionMask: Tensor; packing?: Packing },
  ): Tensor; // values [B, T] (0 at the padding when packed)
}

/** Values at the positions that predict each response token, `[B, R]`. */
export async function computeValues(
  critic: ValueModel,
  batch: Batch,
  options: MicroBatching,
): Promise<Float32Array> {
  const P = batch.promptLength, R = batch.responseLength;
  const parts: { rows: number[]; v: Tensor }[] = [];
  noGrad(() => {
    for (const rows of microBatches(batch, range(batch.size), options)) {
      const v = scope(() => {
        const t = uploadSequences(batch, rows, options);
        return critic.forward(t.ids, {
          positionIds: t.pos,
          attentionMask: t.mask,
          packing: t.packing,
        });
      });
      parts.push({ rows, v: v.keep() });
    }
  });
  const bytes = await gpu().read(parts.map((p) => ({ buffer: p.v.buffer, size: p.v.byteSize })));
  const values = new Float32Array(batch.size * R);
  parts.forEach((p, k) => {
    const v = responseSlice(new Float32Array(bytes[k]), p.rows.length, P, R);
    p.rows.forEach((b, i) => values.set(v.subarray(i * R, i * R + R), b * R));
    p.v.dispose();
  });
  return values;
}

export interface CriticUpdateOptions extends Omit<UpdateLoopOptions, "stream"> {
  cliprangeValue: number;
  lossAggMode: LossAggMode;
}

/**
 * Value-loss epochs over shuffled mini-batches; returns verl's critic/* metrics. Each micro-batch
 * runs forward -> the fused clipped value loss -> backward on the GPU; its statistics are summed
 * on the GPU and read with each mini-batch's grad norm.
 */
export async function updateCritic(
  critic: ValueModel,
  optimizer: Optimizer,
  batch: Batch,
  o: CriticUpdateOptions,
): Promise<Record<string, number>> {
  const { metrics, skips } = await updateLoop(
    batch,
    optimizer,
    { ...o, stream: 29 },
    { gradNorm: "critic/grad_norm", stats: CRITIC_STAT_NAMES },
    (mb) => {
      const t = uploadSequences(batch, mb.rows, o);
      const f = { positionIds: t.pos, attentionMask: t.mask, packing: t.packing };
      const vpreds = critic.forward(t.ids, f); // [n, T]
      const res = criticMicroLoss(vpreds, batch, mb, o);
      scaledBackward(res.loss, optimizer);
      return res.stats;
    },
  );
  return {
    ...metrics,
    "critic/lr": o.lr,
    ...stepMetrics("critic", optimizer, skips),
  };
}
