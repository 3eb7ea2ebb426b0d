/**
 * GPU-side timing for benchmarks. With `timestamp-query`, `begin()` / `end()` each record an
 * empty compute pass that writes a timestamp into the recorder's encoder (`end()` then submits),
 * so a span brackets exactly the work recorded between them, in one submit; all spans are resolved and read back once,
 * in `read()`. Without timestamps the spans fall back to wall time around a full sync (which then
 * includes the ~11 ms a sync costs in Deno: time many dispatches per span).
 */
import { gpu } from "../src/gpu/mod.ts";

export class GpuTimer {
  readonly gpuTimed: boolean;
  #querySet: GPUQuerySet | null = null;
  #resolve: GPUBuffer | null = null;
  #next = 0;
  #wall: number[] = [];

  /** `spans`: how many begin/end pairs this timer holds before `read()` or `reset()`. */
  constructor(readonly spans = 64, options: { wallClock?: boolean } = {}) {
    const g = gpu();
    this.gpuTimed = g.hasTimestamps && !options.wallClock;
    if (this.gpuTimed) {
      this.#querySet = g.device.createQuerySet({ type: "timestamp", count: 2 * spans });
      this.#resolve = g.device.createBuffer({
        size: 16 * spans,
        usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
      });
    }
  }

  async #mark(): Promise<void> {
    if (this.#next >= 2 * this.spans) throw new Error(`GpuTimer: more than ${this.spans} spans`);
    const g = gpu();
    if (!this.gpuTimed) {
      // Wall clock: wait for everything so far, then stamp.
      await g.sync();
      this.#wall[this.#next++] = performance.now();
      return;
    }
    // Recorded into the same encoder as the work: a stamp submitted on its own would start the
    // span while the CPU still records the work, timing that recording as GPU idle time.
    const end = this.#next % 2 === 1;
    g.recorder.timestamp(this.#querySet!, this.#next++);
    if (end) g.flush();
  }

  /**
   * Starts a span after all previously recorded work. With timestamps it returns at once (no
   * wait); the wall-clock fallback waits for the GPU, so always await it.
   */
  begin(): Promise<void> {
    if (this.#next % 2 !== 0) throw new Error("GpuTimer: begin() twice without end()");
    return this.#mark();
  }

  /** Ends the current span after all work recorded since `begin()`. */
  end(): Promise<void> {
    if (this.#next % 2 !== 1) throw new Error("GpuTimer: end() without begin()");
    return this.#mark();
  }

  /** Milliseconds of every finished span, in order; one resolve and one readback for all. */
  async read(): Promise<number[]> {
    const n = Math.floor(this.#next / 2);
    if (!this.gpuTimed) {
      return Array.from({ length: n }, (_, i) => this.#wall[2 * i + 1] - this.#wall[2 * i]);
    }
    if (n === 0) return [];
    const g = gpu();
    g.flush();
    const enc = g.device.createCommandEncoder();
    enc.resolveQuerySet(this.#querySet!, 0, 2 * n, this.#resolve!, 0);
    g.device.queue.submit([enc.finish()]);
    const [bytes] = await g.read([{ buffer: this.#resolve!, size: 16 * n }]);
    const t = new BigUint64Array(bytes);
    return Array.from({ length: n }, (_, i) => Number(t[2 * i + 1] - t[2 * i]) / 1e6);
  }

  /** Forgets all spans so the query set can be reused. */
  reset(): void {
    this.#next = 0;
    this.#wall = [];
  }

  destroy(): void {
    this.#querySet?.destroy();
    this.#resolve?.destroy();
  }
}

/**
 * Runs `fn` (which records GPU work) until `ms` of wall time have passed, a sync after each
 * batch: an idle GPU runs at a low clock, so a product timed right after operands were made on the
 * host (seconds of CPU work) reads slow (bench/README.md). Batches double until one takes 50 ms:
 * a sync costs milliseconds in Deno, and ten 70 us products between syncs kept an H100 at 345 MHz
 * (`nvidia-smi`), its GPU idle most of the time.
 */
export async function warmGpu(fn: () => void, ms = 300): Promise<void> {
  const end = performance.now() + ms;
  let batch = 10;
  while (performance.now() < end) {
    const t0 = performance.now();
    for (let i = 0; i < batch; i++) fn();
    await gpu().sync();
    if (performance.now() - t0 < 50) batch *= 2;
  }
}

/** Times `fn` (which records GPU work) over `reps` spans after `warmup` untimed calls. */
export async function timeGpu(
  fn: () => void,
  options: { reps?: number; warmup?: number; perSpan?: number } = {},
): Promise<{ ms: number[]; medianMs: number; gpuTimed: boolean }> {
  const { reps = 5, warmup = 1, perSpan = 1 } = options;
  for (let i = 0; i < warmup; i++) fn();
  await gpu().sync();
  const timer = new GpuTimer(reps);
  for (let r = 0; r < reps; r++) {
    await timer.begin();
    for (let i = 0; i < perSpan; i++) fn();
    await timer.end();
  }
  const ms = (await timer.read()).map((t) => t / perSpan);
  timer.destroy();
  const sorted = [...ms].sort((a, b) => a - b);
  return { ms, medianMs: sorted[Math.floor(sorted.length / 2)], gpuTimed: timer.gpuTimed };
}

/**
 * Least mean GPU milliseconds of `perRun` calls of `run` over `reps` profiled runs (every kernel
 * it records counts, split sums included), after 3 warm-up calls. Needs `timestamp-query`.
 */
export async function profiledMs(
  run: () => void,
  options: { reps?: number; perRun?: number } = {},
): Promise<number> {
  const { reps = 3, perRun = 5 } = options;
  const g = gpu();
  for (let i = 0; i < 3; i++) run();
  await g.sync();
  let best = Infinity;
  for (let rep = 0; rep < reps; rep++) {
    const prof = await g.profile(() => {
      for (let r = 0; r < perRun; r++) run();
    });
    best = Math.min(best, prof.reduce((t, p) => t + p.ms, 0) / perRun);
  }
  return Math.round(best * 1000) / 1000;
}
