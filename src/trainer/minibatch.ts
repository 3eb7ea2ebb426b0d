/**
 * The PPO update loop both the actor and the critic run: `ppo_epochs` passes over shuffled
 * mini-batches, each accumulating gradients over micro-batches, then one optimizer step.
 *
 * Nothing is read back inside the micro-batch loop: each micro-batch records its forward, loss and
 * backward and hands back its loss statistics as a small GPU tensor, which is summed into one
 * running tensor per mini-batch; the optimizer step reads that sum in the round trip that reads the
 * grad norm. Metrics are the means over micro-batches (verl's reduce_metrics of per-micro-batch
 * values), so summing on the GPU and dividing by the micro-batch count keeps their meaning.
 */
import { gpu } from "../gpu/mod.ts";
import type { Tick } from "../tracking/mod.ts";
import { accumulate, scope, seededRandom, shuffled, type Tensor, zeros } from "../tensor/mod.ts";
import { type Batch, chunks, range } from "./batch.ts";
import { type Optimizer, optimizerStep } from "./optimizer_step.ts";
import { microBatches, type MicroBatching } from "./dynamic_bsz.ts";

export interface UpdateLoopOptions extends MicroBatching {
  ppoEpochs: number;
  miniBatchSize: number; // samples
  shuffle: boolean;
  seed: number;
  step: number;
  lr: number;
  gradClip: number;
  /** Distinguishes the actor's shuffle stream from the critic's. */
  stream: number;
  /** Hears mini-batches done (of ppoEpochs x mini-batches), each after its optimizer step. */
  onProgress?: Tick;
}

/** What one micro-batch sees: its rows and the mini-batch's totals for loss aggregation. */
export interface MicroBatch {
  rows: number[];
  miniRows: number; // sequences in the mini-batch
  miniTokens: number; // valid response tokens in the mini-batch
  responseMask: Int32Array; // [rows, R]
}

/** Where the loop's metrics go. */
export interface UpdateMetricNames {
  /** Key of the grad norm, one value per optimizer step. */
  gradNorm: string;
  /** Key of each entry of the stats tensor `micro` returns; null: summed but not reported. */
  stats: readonly (string | null)[];
}

/**
 * Runs `micro` (forward, loss, backward; returns its `[k]` stats tensor, k = names.stats.length)
 * for every micro-batch inside a scope, steps the optimizer after each mini-batch, and returns the
 * metric means plus the mean grad norm and the count of skipped (non-finite) steps.
 */
export async function updateLoop(
  batch: Batch,
  optimizer: Optimizer,
  o: UpdateLoopOptions,
  names: UpdateMetricNames,
  micro: (m: MicroBatch) => Tensor,
): Promise<{ metrics: Record<string, number>; skipped: number }> {
  const R = batch.responseLength, k = names.stats.length;
  const sums = new Float64Array(k); // over every micro-batch of the update
  const norms: number[] = [];
  let micros = 0, skipped = 0, minis = 0;
  const totalMinis = o.ppoEpochs * Math.ceil(batch.size / o.miniBatchSize);
  for (let epoch = 0; epoch < o.ppoEpochs; epoch++) {
    const order = o.shuffle
      ? shuffled(range(batch.size), seededRandom(o.seed, o.step, epoch, o.stream))
      : range(batch.size);
    for (const mini of chunks(order, o.miniBatchSize)) {
      let miniTokens = 0;
      for (const b of mini) for (let r = 0; r < R; r++) miniTokens += batch.responseMask[b * R + r];
      const acc = zeros([k], "update.stats").keep(); // [k] sum over this mini-batch's micro-batches
      for (const rows of microBatches(batch, mini, o)) {
        const responseMask = new Int32Array(rows.length * R);
        rows.forEach((b, i) =>
          responseMask.set(batch.responseMask.subarray(b * R, b * R + R), i * R)
        );
        scope(() =>
          accumulate(acc, micro({ rows, miniRows: mini.length, miniTokens, responseMask }))
        );
        // Submit without waiting, so the GPU runs this micro-batch while the next one records.
        gpu().flush();
        micros++;
      }
      const st = await optimizerStep(optimizer, { lr: o.lr, gradClip: o.gradClip, readAlso: acc });
      acc.dispose();
      st.read.forEach((v, j) => (sums[j] += v));
      norms.push(st.gradNorm);
      if (st.skipped) skipped++;
      o.onProgress?.(++minis, totalMinis);
    }
  }
  const metrics: Record<string, number> = {};
  names.stats.forEach((name, j) => {
    if (name !== null && micros > 0) metrics[name] = sums[j] / micros;
  });
  if (norms.length) metrics[names.gradNorm] = norms.reduce((a, b) => a + b, 0) / norms.length;
  return { metrics, skipped };
}
