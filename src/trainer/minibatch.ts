/**
 * The PPO update loop both the actor and the critic run: `ppo_epochs` passes over shuffled
 * mini-batches, each accumulating gradients over micro-batches, then one optimizer step.
 */
import { scopeAsync, seededRandom, shuffled } from "../tensor/mod.ts";
import { type Batch, chunks, range } from "./batch.ts";
import { type Optimizer, optimizerStep } from "./optimizer_step.ts";
import { appendMetrics, reduceMetrics } from "./util.ts";

export interface UpdateLoopOptions {
  ppoEpochs: number;
  miniBatchSize: number; // samples
  microBatchSize: number;
  shuffle: boolean;
  seed: number;
  step: number;
  lr: number;
  gradClip: number;
  /** Distinguishes the actor's shuffle stream from the critic's. */
  stream: number;
}

/** What one micro-batch sees: its rows and the mini-batch's totals for loss aggregation. */
export interface MicroBatch {
  rows: number[];
  miniRows: number; // sequences in the mini-batch
  miniTokens: number; // valid response tokens in the mini-batch
  responseMask: Int32Array; // [rows, R]
}

/**
 * Runs `micro` (forward, loss, backward; returns its metrics) for every micro-batch inside a scope,
 * steps the optimizer after each mini-batch, and returns the metric means plus grad norms under
 * `gradNormKey` and the count of skipped (non-finite) steps.
 */
export async function updateLoop(
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
      for (const rows of chunks(mini, o.microBatchSize)) {
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
