/**
 * The critic: values of the response positions and the clipped value-loss update. Like the
 * actor, the loss is the pure `computeValueLoss` over `[b, R]` arrays and its gradient w.r.t. the
 * predicted values is back-propagated on the GPU.
 */
import { computeValueLoss, type LossAggMode } from "../algos/mod.ts";
import { gpu } from "../gpu/device.ts";
import { backward, noGrad, scope, scopeAsync, Tensor } from "../tensor/mod.ts";
import { uploadSequences } from "./actor.ts";
import { type Batch, chunks, gatherRows, range, responseScatter, responseSlice } from "./batch.ts";
import { type Optimizer, optimizerStep } from "./optimizer_step.ts";
import { appendMetrics, reduceMetrics, seededRandom, shuffled } from "./util.ts";

export interface ValueModel {
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
  const lists: Record<string, number[]> = {};
  for (let epoch = 0; epoch < o.ppoEpochs; epoch++) {
    const order = o.shuffle
      ? shuffled(range(batch.size), seededRandom(o.seed, o.step, epoch, 29))
      : range(batch.size);
    for (const mini of chunks(order, o.miniBatchSize)) {
      let tokens = 0;
      for (const b of mini) for (let r = 0; r < R; r++) tokens += batch.responseMask[b * R + r];
      for (const rows of chunks(mini, o.microBatchSize)) {
        await scopeAsync(async () => {
          const t = uploadSequences(batch, rows);
          const vpred = critic.forward(t.ids, { positionIds: t.pos, attentionMask: t.mask });
          const [bytes] = await gpu().read([{ buffer: vpred.buffer, size: vpred.byteSize }]);
          const n = rows.length;
          const mask = new Int32Array(n * R);
          rows.forEach((b, i) => mask.set(batch.responseMask.subarray(b * R, b * R + R), i * R));
          const res = computeValueLoss({
            R,
            vpreds: responseSlice(new Float32Array(bytes), n, P, R),
            values: gatherRows(batch.values!, R, rows),
            returns: gatherRows(batch.returns!, R, rows),
            responseMask: mask,
          }, {
            cliprangeValue: o.cliprangeValue,
            lossAggMode: o.lossAggMode,
            batchNumTokens: tokens,
            globalBatchSize: mini.length,
          });
          appendMetrics(lists, res.metrics);
          const seed = responseScatter(res.gradVpreds as Float32Array, n, P, R);
          backward(vpred, Tensor.from(seed, vpred.shape));
        });
      }
      const step = await optimizerStep(optimizer, { lr: o.lr, gradClip: o.gradClip });
      appendMetrics(lists, { "critic/grad_norm": step.gradNorm });
    }
  }
  return { ...reduceMetrics(lists), "critic/lr": o.lr };
}
