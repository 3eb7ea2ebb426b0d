import { BufferPool } from "./buffer_pool.ts";
import { formatBytes, GpuError } from "./errors.ts";
import { type KernelSpec, PipelineCache } from "./pipelines.ts";
import { multiprocessorCount } from "./multiprocessors.ts";
import { KernelProfiler, type KernelSpan, Recorder } from "./recorder.ts";
import type { Binding } from "./types.ts";
import type { Params } from "./params.ts";

export interface GpuOptions {
  powerPreference?: GPUPowerPreference;
  /** Ignore `shader-f16` even where the adapter has it (f32 everywhere). */
  disableF16?: boolean;
  /** Use this adapter instead of asking navigator.gpu (tests, the browser page). */
  adapter?: GPUAdapter;
}

export interface DispatchOptions {
  /** Uniform parameters, bound at @binding(0); each field 4 bytes (see `packParams`). */
  params?: Params;
  /**
   * Storage buffers, bound at @binding(1), @binding(2), ... (or from 0 when no params); null
   * skips a binding number that the entry point does not use (an optional operand left out).
   */
  buffers: (Binding | null)[];
  workgroups: [number, number?, number?];
}

/** The limits the device is asked for at the adapter's values, and which kernels read. */
const LIMITS = [
  "maxBufferSize",
  "maxStorageBufferBindingSize",
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
  "maxComputeWorkgroupSizeX",
  "maxComputeWorkgroupSizeY",
  "maxComputeWorkgroupSizeZ",
  "maxComputeWorkgroupsPerDimension",
  "maxStorageBuffersPerShaderStage",
  "minStorageBufferOffsetAlignment",
] as const;
type LimitName = typeof LIMITS[number];
export type DeviceLimits = Readonly<Record<LimitName, number>>;

/**
 * One GPU device with everything the kernels share: the adapter's limits, a buffer pool, the
 * pipeline cache and a recorder that batches dispatches into one command encoder. Readbacks cost
 * about 11 ms in Deno whatever the adapter, so the API makes them explicit and rare: work is only
 * submitted by `flush()` (or a readback), never per op.
 */
export class Gpu {
  readonly hasF16: boolean;
  readonly hasTimestamps: boolean;
  /** A software adapter (llvmpipe, SwiftShader): few cores, so kernels prefer fewer, larger blocks. */
  readonly isCpuAdapter: boolean;
  /** Multiprocessors of a GPU known by name (`multiprocessors.ts`); null when unknown. */
  readonly multiprocessors: number | null;
  /** The device's limits that kernels read, copied once (each read of `device.limits` is a call). */
  readonly limits: DeviceLimits;
  readonly pool: BufferPool;
  readonly pipelines: PipelineCache;
  readonly recorder: Recorder;
  #failure: Error | null = null;

  private constructor(
    readonly adapter: GPUAdapter,
    readonly device: GPUDevice,
    readonly adapterName: string,
    useF16: boolean,
  ) {
    this.hasF16 = useF16;
    this.hasTimestamps = device.features.has("timestamp-query");
    const info = adapter.info;
    this.isCpuAdapter = !!(info?.isFallbackAdapter) ||
      /llvmpipe|swiftshader|lavapipe|software/i.test(`${info?.description} ${info?.device}`);
    this.multiprocessors = this.isCpuAdapter ? null : multiprocessorCount(adapterName);
    const limits = {} as Record<LimitName, number>;
    for (const k of LIMITS) limits[k] = device.limits[k];
    this.limits = Object.freeze(limits);
    this.pool = new BufferPool(device, limits.maxBufferSize);
    this.pipelines = new PipelineCache(device);
    this.recorder = new Recorder(device, () => this.throwIfFailed());
    // A CPU adapter runs the commands on the cores that record them: nothing to overlap.
    this.recorder.earlySubmits = !this.isCpuAdapter;
    device.lost.then((info) => {
      this.#failure ??= new GpuError(
        `GPU device lost (${info.reason ?? "unknown"}): ${info.message || "no message"}`,
      );
      this.recorder.fail(this.#failure);
    });
    device.addEventListener("uncapturederror", (ev) => {
      const err = (ev as GPUUncapturedErrorEvent).error;
      this.#failure ??= new GpuError(`GPU error: ${err.message}`);
    });
  }

  static async create(options: GpuOptions = {}): Promise<Gpu> {
    // navigator.gpu as a window and a worker both have it (a worker's navigator is no Navigator)
    const nav = (globalThis as { navigator?: { gpu?: GPU } }).navigator;
    const adapter = options.adapter ??
      await nav?.gpu?.requestAdapter({ powerPreference: options.powerPreference });
    if (!adapter) {
      throw new GpuError(
        "no WebGPU adapter: navigator.gpu is missing or returned no adapter (in a browser, enable " +
          "WebGPU; on Linux without a GPU, install Mesa's Vulkan driver (mesa-vulkan-drivers))",
      );
    }
    const wantF16 = adapter.features.has("shader-f16") && !options.disableF16;
    const features: GPUFeatureName[] = [];
    if (wantF16) features.push("shader-f16");
    if (adapter.features.has("timestamp-query")) features.push("timestamp-query");
    // The defaults are far below what server GPUs offer; ask for the adapter's own limits.
    const requiredLimits: Record<string, number> = {};
    for (const k of LIMITS) requiredLimits[k] = adapter.limits[k];
    const device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits });
    const info = adapter.info;
    const name = [info?.vendor, info?.architecture, info?.device, info?.description]
      .filter((s) => s && s !== "0").join(" ") || "unknown adapter";
    return new Gpu(adapter, device, name, wantF16);
  }

  /** Throws the first asynchronous GPU failure (device loss, validation error) seen so far. */
  throwIfFailed(): void {
    if (this.#failure) throw this.#failure;
  }

  /**
   * Checks a storage binding against the device limit, naming the limit and the size; `label`
   * names what was bound (a function: made only for the error, not on every allocation).
   */
  checkBinding(bytes: number, label: string | (() => string)): void {
    const max = this.limits.maxStorageBufferBindingSize;
    if (bytes > max) {
      const what = typeof label === "string" ? label : label();
      throw new GpuError(
        `${what}: ${formatBytes(bytes)} exceeds maxStorageBufferBindingSize (${formatBytes(max)})`,
      );
    }
  }

  pipeline(spec: KernelSpec): GPUComputePipeline {
    return this.pipelines.get(spec);
  }

  /** Records one compute dispatch into the current command encoder. */
  dispatch(spec: KernelSpec, options: DispatchOptions): void {
    this.throwIfFailed();
    const [x, y = 1, z = 1] = options.workgroups;
    if (x === 0 || y === 0 || z === 0) return;
    const max = this.limits.maxComputeWorkgroupsPerDimension;
    if (x > max || y > max || z > max) {
      throw new GpuError(
        `${spec.shader}: dispatch [${x}, ${y}, ${z}] exceeds maxComputeWorkgroupsPerDimension (${max})`,
      );
    }
    this.recorder.dispatch(this.pipeline(spec), options.params, options.buffers, [x, y, z]);
  }

  /** Copies CPU data into a buffer, ordered after every command recorded so far. */
  upload(dst: GPUBuffer, data: ArrayBufferView, dstOffset = 0): void {
    this.throwIfFailed();
    this.recorder.upload(dst, data, dstOffset);
  }

  copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, size: number): void {
    this.recorder.copy(src, srcOffset, dst, dstOffset, size);
  }

  /** Submits everything recorded so far (no wait). */
  flush(): void {
    this.throwIfFailed();
    this.recorder.flush();
  }

  /** Reads byte ranges of several buffers back in one round trip. */
  async read(
    ranges: { buffer: GPUBuffer; offset?: number; size: number }[],
  ): Promise<ArrayBuffer[]> {
    this.throwIfFailed();
    const out = await this.recorder.read(ranges);
    this.throwIfFailed();
    return out;
  }

  /**
   * Reads as `read` does and, until the data is back, calls `work` once per turn of the event
   * loop while it returns true. A read in Deno first waits for the queue to empty and then about
   * 10 ms more (bench/read_latency.ts); work recorded and submitted meanwhile keeps the GPU busy
   * through that wait. The copy out of `ranges` is submitted before `work` first runs, so what
   * `work` records does not change the data read.
   */
  async readWhile(
    ranges: { buffer: GPUBuffer; offset?: number; size: number }[],
    work: () => boolean,
  ): Promise<ArrayBuffer[]> {
    const pending = this.read(ranges);
    let settled = false;
    const done = () => settled = true;
    pending.then(done, done);
    try {
      while (!settled && work()) await nextTurn();
    } catch (e) {
      await pending.catch(() => {});
      throw e;
    }
    return await pending;
  }

  /** Waits until all submitted work has finished (or the device is lost). */
  async sync(): Promise<void> {
    this.flush();
    await this.recorder.idle();
    this.throwIfFailed();
  }

  /**
   * Runs `fn` with every dispatch timed by timestamp queries and returns GPU milliseconds per
   * kernel (shader:entry; with `byPipeline`, per whole pipeline key), largest first. `spans`
   * receives every timed dispatch, in recording order (for `gpuGaps`). Needs the `timestamp-query`
   * feature.
   */
  async profile(
    fn: () => Promise<void> | void,
    options: { byPipeline?: boolean; maxPasses?: number; spans?: KernelSpan[] } = {},
  ): Promise<{ kernel: string; ms: number; count: number }[]> {
    if (!this.hasTimestamps) throw new GpuError("profiling needs the timestamp-query feature");
    const p = new KernelProfiler(
      this.device,
      options.maxPasses ?? 65536,
      options.byPipeline,
      options.spans ?? null,
    );
    this.flush();
    this.recorder.profiler = p;
    try {
      await fn();
      await p.collect(this.recorder);
    } finally {
      this.recorder.profiler = null;
    }
    return [...p.totals].map(([kernel, e]) => ({ kernel, ms: e.ns / 1e6, count: e.count }))
      .sort((a, b) => b.ms - a.ms);
  }

  destroy(): void {
    this.pool.trim();
    this.device.destroy();
  }
}

/** One turn of the event loop: lets an op's completion (a read's map) be delivered. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

let current: Gpu | null = null;

/** Creates the process-wide GPU (once) and returns it. */
export async function initGpu(options: GpuOptions = {}): Promise<Gpu> {
  current ??= await Gpu.create(options);
  return current;
}

/** The GPU set up by `initGpu()`; ops use it implicitly. */
export function gpu(): Gpu {
  if (!current) throw new GpuError("the GPU is not initialised: call `await initGpu()` first");
  return current;
}
