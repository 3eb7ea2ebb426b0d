/**
 * The check of an untrusted worker's log-probs (distributed.logprob_tolerance): a sample whose
 * mean |rollout - trainer| over its response tokens exceeds the tolerance rejects its group.
 * Without bypass mode the trainer's log-probs are the recomputed old ones (RemoteRollout.verify,
 * before the update); in bypass mode there is no recomputation, so `LogProbAudit` applies the
 * same rule inside the actor update to the current policy's log-probs, which the update's own
 * forward computes: one readback per mini-batch, and a mini-batch holding a rejected group is run
 * again without it before its optimizer step (src/trainer/minibatch.ts).
 */
import type { GenBatch } from "./batch.ts";
import type { MiniBatchAudit, Probe } from "./minibatch.ts";

/**
 * Mean |rollout - trainer| over row `b`'s response tokens (0 without any); Infinity when a
 * rollout log-prob is not finite. `trainer(r)` is the trainer's log-prob of response token r.
 */
export function logProbDiff(
  rollout: Float32Array, // [B, R]
  mask: Int32Array, // [B, R]
  R: number,
  b: number,
  trainer: (r: number) => number,
): number {
  let sum = 0, count = 0;
  for (let r = 0; r < R; r++) {
    if (!mask[b * R + r]) continue;
    const x = rollout[b * R + r];
    sum += Number.isFinite(x) ? Math.abs(x - trainer(r)) : Infinity;
    count++;
  }
  return count ? sum / count : 0;
}

/** Per-worker rejection counts and the diff statistics of a step (the distributed/* metrics). */
export class RejectionTally {
  readonly rejected = new Set<string>(); // uids
  #workers = new Map<string, number>();
  #diffSum = 0;
  #diffMax = 0;
  #rows = 0;

  diff(d: number): void {
    this.#diffSum += d;
    this.#diffMax = Math.max(this.#diffMax, d);
    this.#rows++;
  }

  reject(uid: string, workerId: string): boolean {
    if (this.rejected.has(uid)) return false;
    this.rejected.add(uid);
    this.#workers.set(workerId, (this.#workers.get(workerId) ?? 0) + 1);
    return true;
  }

  /** With `diffs` false the logprob_diff metrics are left out (no log-prob was compared yet). */
  metrics(diffs = true): Record<string, number> {
    const m: Record<string, number> = { "distributed/rejected_groups": this.rejected.size };
    if (diffs) {
      m["distributed/logprob_diff/mean"] = this.#rows ? this.#diffSum / this.#rows : 0;
      m["distributed/logprob_diff/max"] = this.#diffMax;
    }
    for (const [w, n] of this.#workers) m[`distributed/rejected/${w}`] = n;
    return m;
  }
}

/**
 * Bypass mode's log-prob check inside the actor update. Probes are the update's log-probs of the
 * micro-batch, `[rows, P + R]` (the value at P - 1 + r is response token r's). Each sample's
 * first check (its first mini-batch, epoch 0) feeds the diff metrics; a sample is checked in every
 * mini-batch it appears in, against the weights of that moment.
 */
export class LogProbAudit implements MiniBatchAudit {
  #batch: GenBatch & { rolloutLogProbs: Float32Array };
  #workerOf: (uid: string) => string | undefined;
  #tolerance: number;
  #tally: RejectionTally;
  #seen = new Set<number>();

  constructor(
    batch: GenBatch,
    o: { workerOf: (uid: string) => string | undefined; tolerance: number; tally: RejectionTally },
  ) {
    if (!batch.rolloutLogProbs) throw new Error("the log-prob audit needs the rollout log-probs");
    this.#batch = { ...batch, rolloutLogProbs: batch.rolloutLogProbs };
    this.#workerOf = o.workerOf;
    this.#tolerance = o.tolerance;
    this.#tally = o.tally;
  }

  check(probes: Probe[]): number[] {
    const bt = this.#batch, P = bt.promptLength, R = bt.responseLength, T = P + R;
    const newly = new Set<string>();
    for (const { rows, values } of probes) {
      rows.forEach((b, i) => {
        const uid = bt.uid[b], worker = this.#workerOf(uid);
        if (worker === undefined || this.#tally.rejected.has(uid)) return;
        const d = logProbDiff(
          bt.rolloutLogProbs,
          bt.responseMask,
          R,
          b,
          (r) => values[i * T + P - 1 + r],
        );
        if (!this.#seen.has(b)) (this.#seen.add(b), this.#tally.diff(d));
        if (!(d <= this.#tolerance) && this.#tally.reject(uid, worker)) newly.add(uid);
      });
    }
    if (newly.size === 0) return [];
    return bt.uid.flatMap((u, b) => (newly.has(u) ? [b] : []));
  }

  /** The step's distributed/* rejection metrics, the score check's included. */
  metrics(): Record<string, number> {
    return this.#tally.metrics();
  }
}
