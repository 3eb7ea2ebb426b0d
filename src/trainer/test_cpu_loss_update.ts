/**
 * For tests only: the PPO updates as the trainer ran them before the losses moved to the GPU.
 * Each micro-batch reads the model's outputs back, computes the loss with the plain-TS references
 * of src/algos (computeActorLoss / computeValueLoss) and seeds backward with their CPU gradients.
 * The GPU path must reproduce these parameters and metrics.
 */
import { computeActorLoss, computeValueLoss } from "../algos/mod.ts";
import { gpu } from "../gpu/mod.ts";
import {
  backward,
  logprobEntropy,
  scopeAsync,
  seededRandom,
  shuffled,
  Tensor,
} from "../tensor/mod.ts";
import { type ActorUpdateOptions, type CausalModel, uploadSequences } from "./actor.ts";
import { type Batch, chunks, gatherRows, range, responseScatter, responseSlice } from "./batch.ts";
import type { CriticUpdateOptions, ValueModel } from "./critic.ts";
import type { MicroBatch, UpdateLoopOptions } from "./minibatch.ts";
import { type Optimizer, optimizerStep } from "./optimizer_step.ts";
import { microBatchSeed, withEntropy as withEntropyOf } from "./ppo_micro_loss.ts";
import { appendMetrics, reduceMetrics } from "./util.ts";

/** The former update loop: per-micro-batch metrics on the CPU, averaged at the end. */
async function cpuLoop(
  batch: Batch,
  optimizer: Optimizer,
  o: UpdateLoopOptions,
  gradNormKey: string,
  micro: (m: MicroBatch) => Promise<Record<string, number>>,
): Promise<{ metrics: Record<string, number>; skipped: number }> {
  const R = batch.responseLength;
  const lists: Record<string, number[]> = {};
  let skipped = 0;
  for (let epoch = 0; epoch < o.ppoEpochs; epoch++) {
    const order = o.shuffle
      ? shuffled(range(batch.size), seededRandom(o.seed, o.step, epoch, o.stream))
      : range(batch.size);
    for (const mini of chunks(order, o.miniBatchSize)) {
      let miniTokens = 0;
      for (const b of mini) for (let r = 0; r < R; r++) miniTokens += batch.responseMask[b * R + r];
      for (const rows of chunks(mini, o.microBatchSize ?? mini.length)) {
        const responseMask = new Int32Array(rows.length * R);
        rows.forEach((b, i) =>
          responseMask.set(batch.responseMask.subarray(b * R, b * R + R), i * R)
        );
        const m = await scopeAsync(() =>
          micro({ rows, miniRows: mini.length, miniTokens, responseMask })
        );
        appendMetrics(lists, m);
      }
      const st = await optimizerStep(optimizer, { lr: o.lr, gradClip: o.gradClip });
      appendMetrics(lists, { [gradNormKey]: st.gradNorm });
      if (st.skipped) skipped++;
    }
  }
  return { metrics: reduceMetrics(lists), skipped };
}

/** updateActor with the loss on the CPU (one readback per micro-batch). */
export async function updateActorCpuLoss(
  model: CausalModel,
  optimizer: Optimizer,
  batch: Batch,
  o: ActorUpdateOptions,
): Promise<Record<string, number>> {
  const P = batch.promptLength, R = batch.responseLength;
  const withEntropy = withEntropyOf(o.loss);
  let micro = 0;
  const { metrics, skipped } = await cpuLoop(
    batch,
    optimizer,
    { ...o, stream: 17 },
    "actor/grad_norm",
    async (mb) => {
      const { rows } = mb;
      const n = rows.length;
      const t = uploadSequences(batch, rows);
      const logits = model.forward(t.ids, { positionIds: t.pos, attentionMask: t.mask });
      const out = logprobEntropy(logits, t.targets, { withEntropy, temperature: o.temperature });
      const read = await gpu().read(
        [out.logProbs, ...(out.entropy ? [out.entropy] : [])].map((x) => ({
          buffer: x.buffer,
          size: x.byteSize,
        })),
      );
      const res = computeActorLoss({
        R,
        logProb: responseSlice(new Float32Array(read[0]), n, P, R),
        oldLogProb: gatherRows(batch.oldLogProbs!, R, rows),
        advantages: gatherRows(batch.advantages!, R, rows),
        responseMask: mb.responseMask,
        entropy: out.entropy ? responseSlice(new Float32Array(read[1]), n, P, R) : undefined,
        refLogProb: o.loss.useKlLoss ? gatherRows(batch.refLogProbs!, R, rows) : undefined,
      }, {
        ...o.loss,
        batchNumTokens: mb.miniTokens,
        globalBatchSize: mb.miniRows,
        seed: microBatchSeed(o.seed, o.step, micro++),
      });
      const seed = (g: Float32Array) => Tensor.from(responseScatter(g, n, P, R), [n * (P + R)]);
      const seedLp = seed(res.gradLogProb as Float32Array);
      if (out.entropy && res.gradEntropy) {
        backward([out.logProbs, out.entropy], [seedLp, seed(res.gradEntropy as Float32Array)]);
      } else backward(out.logProbs, seedLp);
      return res.metrics;
    },
  );
  return { ...metrics, "actor/lr": o.lr, "actor/skipped_steps": skipped };
}

/** updateCritic with the loss on the CPU (one readback per micro-batch). */
export async function updateCriticCpuLoss(
  critic: ValueModel,
  optimizer: Optimizer,
  batch: Batch,
  o: CriticUpdateOptions,
): Promise<Record<string, number>> {
  const P = batch.promptLength, R = batch.responseLength;
  const { metrics, skipped } = await cpuLoop(
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
  return { ...metrics, "critic/lr": o.lr, "critic/skipped_steps": skipped };
}
