/**
 * The critic: values of the response positions and the clipped value-loss update. Like the
 * actor, the loss is the pure `computeValueLoss` over `[b, R]` arrays and its gradient w.r.t. the
 * predicted values is back-propagated on the GPU.
 */
import { computeValueLoss, type LossAggMode } from "../algos/mod.ts";
import { gpu } from "../gpu/mod.ts";
import { backward, noGrad, scope, Tensor } from "../tensor/mod.ts";
import { type TrainableModel, uploadSequences } from "./actor.ts";
import { type Batch, chunks, gatherRows, range, responseScatter, responseSlice } from "./batch.ts";
import type { Optimizer } from "./optimizer_step.ts";
import { updateLoop } from "./minibatch.ts";

export interface ValueModel extends TrainableModel {
  forward(
    inputIds: Tensor,
    options: { positionIds: Tensor; attentionMask: Tensor },
  ): Tensor; // values [B, T]
}

/** Values at the positions that predict each response token, `[B, R]`. */
export async function computeValues(
  critic: ValueModel,
  batch: Batch,
  options: { microBatchSize: number },
): Promise<Float32Array> {
  const P = batch.promptLength, R = batch.responseLength;
  const parts: { rows: number[]; v: Tensor }[] = [];
  noGrad(() => {
    for (const rows of chunks(range(batch.size), options.microBatchSize)) {
      const v = scope(() => {
        const t = uploadSequences(batch, rows);
        return critic.forward(t.ids, { positionIds: t.pos, attentionMask: t.mask });
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

export interface CriticUpdateOptions {
  ppoEpochs: number;
  miniBatchSize: number;
  microBatchSize: number;
  shuffle: boolean;
  seed: number;
  step: number;
  lr: number;
  gradClip: number;
  cliprangeValue: number;
  lossAggMode: LossAggMode;
}

/** Value-loss epochs over shuffled mini-batches; returns verl's critic/* metrics. */
export async function updateCritic(
  critic: ValueModel,
  optimizer: Optimizer,
  batch: Batch,
  o: CriticUpdateOptions,
): Promise<Record<string, number>> {
  const P = batch.promptLength, R = batch.responseLength;
  const { metrics } = await updateLoop(
    batch,
    optimizer,
    { ...o, stream: 29 },
    "critic/grad_norm",
    async (mb) => {
      const { rows } = mb;
      const n = rows.length;
      const t = uploadSequences(batch, rows);
      const vpred = critic.forward(t.ids, { positionIds: t.pos, attentionMask: t.mask });
      const [bytes] = await gpu().read([{ buffer: vpred.buffer, size: vpred.byteSize }]);
      const res = computeValueLoss({
        R,
        vpreds: responseSlice(new Float32Array(bytes), n, P, R),
        values: gatherRows(batch.values!, R, rows),
        returns: gatherRows(batch.returns!, R, rows),
        responseMask: mb.responseMask,
      }, {
        cliprangeValue: o.cliprangeValue,
        lossAggMode: o.lossAggMode,
        batchNumTokens: mb.miniTokens,
        globalBatchSize: mb.miniRows,
      });
      const seed = responseScatter(res.gradVpreds as Float32Array, n, P, R);
      backward(vpred, Tensor.from(seed, vpred.shape));
      return res.metrics;
    },
  );
  return { ...metrics, "critic/lr": o.lr };
}
