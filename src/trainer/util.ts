/** Small deterministic helpers the controller shares: seeded shuffles, lr schedules, timers. */

/** Mulberry32 stream seeded by a tuple, so every (seed, step, epoch) shuffle is reproducible. */
export function seededRandom(...parts: number[]): () => number {
  let s = 0x9e3779b9;
  for (const p of parts) s = Math.imul(s ^ (p >>> 0), 0x85ebca6b) ^ (s >>> 13);
  s >>>= 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A 31-bit seed derived from a tuple (generation seeds per step). */
export function deriveSeed(...parts: number[]): number {
  return Math.floor(seededRandom(...parts)() * 2 ** 31);
}

export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

export interface LrScheduleOptions {
  lr: number;
  totalSteps: number;
  warmupSteps: number;
  style: "constant" | "cosine";
  minLrRatio?: number;
  numCycles?: number;
}

/**
 * Linear warmup from 0 to lr over warmupSteps, then constant or cosine decay to minLrRatio * lr
 * (as verl's FSDP workers do via get_cosine_schedule_with_warmup). `step` counts from 0.
 */
export function learningRate(step: number, o: LrScheduleOptions): number {
  if (o.warmupSteps > 0 && step < o.warmupSteps) return (o.lr * (step + 1)) / o.warmupSteps;
  if (o.style === "constant") return o.lr;
  const minRatio = o.minLrRatio ?? 0;
  const span = Math.max(1, o.totalSteps - o.warmupSteps);
  const progress = Math.min(1, (step - o.warmupSteps) / span);
  const cosine = 0.5 * (1 + Math.cos(Math.PI * 2 * (o.numCycles ?? 0.5) * progress));
  return o.lr * (minRatio + (1 - minRatio) * cosine);
}

/** Accumulates wall time per named stage for `timing_s/*`. */
export class Timer {
  readonly timings: Record<string, number> = {};

  /** `onStage` hears each stage as it starts (the console progress bar). */
  constructor(private readonly onStage?: (name: string) => void) {}

  async time<T>(name: string, fn: () => Promise<T> | T): Promise<T> {
    this.onStage?.(name);
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      this.timings[`timing_s/${name}`] = (this.timings[`timing_s/${name}`] ?? 0) +
        (performance.now() - t0) / 1000;
    }
  }
}

/** Means of lists of per-micro-batch metrics (verl's reduce_metrics). */
export function reduceMetrics(lists: Record<string, number[]>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(lists)) {
    if (v.length) out[k] = v.reduce((a, b) => a + b, 0) / v.length;
  }
  return out;
}

export function appendMetrics(lists: Record<string, number[]>, m: Record<string, number>): void {
  for (const [k, v] of Object.entries(m)) (lists[k] ??= []).push(v);
}
