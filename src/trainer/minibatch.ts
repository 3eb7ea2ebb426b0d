/**
 * The PPO update loop both the actor and the critic run: `ppo_epochs` passes over shuffled
 * mini-batches, each accumulating gradients over micro-batches, then one optimizer step.
 *
 * Nothing is read back inside the micro-batch loop: each micro-batch records its forward, loss and
 * backward and hands back its loss statistics as a small GPU tensor, which is summed into one
 * running tensor per mini-batch; the optimizer step reads that sum in the round trip that reads the
 * grad norm. Metrics are the means over micro-batches (verl's reduce_metrics of per-micro-batch
 * values), so summing on the GPU and dividing by the micro-batch count keeps their meaning. An
 * audit (bypass mode's check of remote workers' log-probs) adds one readback per mini-batch, after
 * its micro-batches and before its optimizer step.
 */
import { gpu } from "../gpu/mod.ts";
import type { Tick } from "../tracking/mod.ts";
import {
  accumulate,
  scope,
  seededRandom,
  shuffled,
  type Tensor,
  zeroGrad,
  zeros,
} from "../tensor/mod.ts";
import { type Batch, chunks, range } from "./batch.ts";
import { type Optimizer, optimizerStep, type SkipCounts } from "./optimizer_step.ts";
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
  /** Checks each mini-batch's probes before its optimizer step (see MiniBatchAudit). */
  audit?: MiniBatchAudit;
}

/** One micro-batch's probe read back: its rows and `width` values per row. */
export interface Probe {
  rows: readonly number[];
  values: Float32Array; // [rows, width]
}

/**
 * A check of every mini-batch before its optimizer step: the micro-batches' probe tensors (the
 * actor's log-probs) are read back in one round trip and `check` names the rows to mask. When it
 * names any, the mini-batch's gradients and statistics are discarded and the mini-batch runs again
 * with those rows' response mask at 0 for the rest of the update (a rerun under the same weights
 * gives the same probes, so it is not checked again).
 */
export interface MiniBatchAudit {
  check(probes: Probe[]): number[];
}

/** What a micro-batch returns: its stats tensor, and under an audit the tensor to read. */
export type MicroOut = Tensor | { stats: Tensor; probe: Tensor | null };

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
 * metric means plus the mean grad norm and the counts of skipped (non-finite) steps.
 */
export async function updateLoop(
  batch: Batch,
  optimizer: Optimizer,
  o: UpdateLoopOptions,
  names: UpdateMetricNames,
  micro: (m: MicroBatch) => MicroOut,
): Promise<{ metrics: Record<string, number>; skips: SkipCounts }> {
  const R = batch.responseLength, k = names.stats.length;
  // an audit masks rows for the rest of the update, so it works on a copy
  const mask = o.audit ? batch.responseMask.slice() : batch.responseMask; // [B, R]
  const sums = new Float64Array(k); // over every micro-batch of the update
  const norms: number[] = [];
  let micros = 0, minis = 0;
  const skips: SkipCounts = { skipped: 0, overflows: 0 };
  const totalMinis = o.ppoEpochs * Math.ceil(batch.size / o.miniBatchSize);
  for (let epoch = 0; epoch < o.ppoEpochs; epoch++) {
    const order = o.shuffle
      ? shuffled(range(batch.size), seededRandom(o.seed, o.step, epoch, o.stream))
      : range(batch.size);
    for (const mini of chunks(order, o.miniBatchSize)) {
      let acc = await miniPass(mini, o.audit);
      if (acc.masked.length) {
        for (const b of acc.masked) mask.fill(0, b * R, b * R + R);
        zeroGrad(optimizer.params);
        acc.stats.dispose();
        acc = await miniPass(mini, undefined);
      }
      micros += acc.micros;
      const st = await optimizerStep(optimizer, {
        lr: o.lr,
        gradClip: o.gradClip,
        readAlso: acc.stats,
      });
      acc.stats.dispose();
      st.read.forEach((v, j) => (sums[j] += v));
      norms.push(st.gradNorm);
      if (st.skipped) skips.skipped++;
      if (st.overflow) skips.overflows++;
      o.onProgress?.(++minis, totalMinis);
    }
  }
  /** Forward, loss and backward of one mini-batch; `masked`: the rows the audit rejected. */
  async function miniPass(mini: number[], audit: MiniBatchAudit | undefined) {
    let miniTokens = 0;
    for (const b of mini) for (let r = 0; r < R; r++) miniTokens += mask[b * R + r];
    const stats = zeros([k], "update.stats").keep(); // [k] sum over the mini-batch's micro-batches
    const probes: { rows: number[]; t: Tensor }[] = [];
    let count = 0;
    for (const rows of microBatches(batch, mini, o)) {
      const responseMask = new Int32Array(rows.length * R);
      rows.forEach((b, i) => responseMask.set(mask.subarray(b * R, b * R + R), i * R));
      scope(() => {
        const out = micro({ rows, miniRows: mini.length, miniTokens, responseMask });
        accumulate(stats, "stats" in out ? out.stats : out);
        if (audit && "probe" in out && out.probe) probes.push({ rows, t: out.probe.keep() });
      });
      // Submit without waiting, so the GPU runs this micro-batch while the next one records.
      gpu().flush();
      count++;
      // Recording is synchronous: one turn of the event loop per micro-batch lets background
      // work (a weights readback, jobs waiting for their version's upload) go on meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    let masked: number[] = [];
    if (audit && probes.length) {
      const bytes = await gpu().read(
        probes.map((p) => ({ buffer: p.t.buffer, size: p.t.byteSize })),
      );
      masked = audit.check(probes.map((p, j) => ({
        rows: p.rows,
        values: new Float32Array(bytes[j]),
      })));
      for (const p of probes) p.t.dispose();
    }
    return { stats, micros: count, masked };
  }

  const metrics: Record<string, number> = {};
  names.stats.forEach((name, j) => {
    if (name !== null && micros > 0) metrics[name] = sums[j] / micros;
  });
  if (norms.length) metrics[names.gradNorm] = norms.reduce((a, b) => a + b, 0) / norms.length;
  return { metrics, skips };
}
