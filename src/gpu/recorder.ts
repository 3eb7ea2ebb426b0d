import type { Binding } from "./types.ts";
import { type Params, writeParams } from "./params.ts";
import { GpuError } from "./errors.ts";

const ARENA_BYTES = 256 * 1024; // uniform arena: 1024 dispatches of 256-byte slots per submit
const SLOT = 256; // minUniformBufferOffsetAlignment on every adapter we target
const UPLOAD_BYTES = 1 << 20; // small uploads behind pending commands, staged per submit
// After a read the GPU is idle (a read waits for the queue to drain): the next submits go out
// after 32, 64, ... dispatches, so the GPU starts while the host records the rest, instead of
// after the arena's 1024.
const SLOW_START = 32;

/**
 * Records dispatches, copies and uploads into one command encoder and submits them together.
 * Uniform parameters of all dispatches in a submit share one arena buffer written just before the
 * submit, so a kernel launch allocates nothing; so do small uploads that must wait for the
 * commands before them (a copy out of an upload arena). Bind groups are cached by pipeline and
 * buffers.
 */
export class Recorder {
  #encoder: GPUCommandEncoder | null = null;
  #pass: GPUComputePassEncoder | null = null;
  #commands = 0;
  #arena: GPUBuffer;
  #arenaCpu = new Uint8Array(ARENA_BYTES);
  #arenaView = new DataView(this.#arenaCpu.buffer);
  #arenaUsed = 0;
  #uploads: GPUBuffer;
  #uploadsCpu = new Uint8Array(UPLOAD_BYTES);
  #uploadsUsed = 0;
  #staging: GPUBuffer[] = [];
  /**
   * Dispatches in the encoder at which it is submitted early (from SLOW_START, doubling up to the
   * arena's count); null: none until the next read or idle wait.
   */
  #early: number | null = SLOW_START;
  #bindGroups = new Map<string, { group: GPUBindGroup; used: number }>();
  #uses = 0;
  #ids = new WeakMap<object, number>();
  #nextId = 1;
  #failure: Error | null = null;
  #lostSignal: Promise<never>;
  #rejectLost!: (e: Error) => void;
  /** Number of submits so far (benchmarks and tests count them). */
  submits = 0;
  /** Number of compute dispatches recorded so far (benchmarks and tests count them). */
  dispatches = 0;
  /** Bind groups made so far (a dispatch whose pipeline, uniforms slot and buffers are new). */
  bindGroups = 0;
  /**
   * Bind groups kept for reuse; past this the least recently used quarter goes. A batch whose
   * shape changes every step (the engine's) binds new buffers often, and clearing the whole cache
   * when full also dropped the groups every step still uses.
   */
  bindGroupCap = 8192;
  /** Host milliseconds spent making them (benchmarks: how much of recording they cost). */
  bindGroupMs = 0;
  /** Host milliseconds spent in `dispatch` in all, counted while `timeHost` is set (benchmarks). */
  dispatchMs = 0;
  /** Whether `dispatch` times itself into `dispatchMs` (off: no clock reads on the hot path). */
  timeHost = false;
  /** Whether the first commands after a read go out in early submits (SLOW_START). */
  earlySubmits = true;
  /** When set, every dispatch runs in its own timed pass (see `Gpu.profile`). */
  profiler: KernelProfiler | null = null;

  constructor(private readonly device: GPUDevice, private readonly check: () => void) {
    this.#arena = device.createBuffer({
      size: ARENA_BYTES,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
      label: "uniform-arena",
    });
    this.#uploads = device.createBuffer({
      size: UPLOAD_BYTES,
      usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
      label: "upload-arena",
    });
    this.#lostSignal = new Promise<never>((_, reject) => this.#rejectLost = reject);
    this.#lostSignal.catch(() => {});
  }

  fail(err: Error): void {
    this.#failure = err;
    this.#rejectLost(err);
  }

  #id(o: object): number {
    let id = this.#ids.get(o);
    if (id === undefined) this.#ids.set(o, id = this.#nextId++);
    return id;
  }

  /** Drops the least recently used quarter of the bind groups (the cache is full). */
  #evict(): void {
    const byUse = [...this.#bindGroups].sort((x, y) => x[1].used - y[1].used);
    for (const [key] of byUse.slice(0, Math.max(1, byUse.length >> 2))) {
      this.#bindGroups.delete(key);
    }
  }

  #encoderNow(): GPUCommandEncoder {
    return this.#encoder ??= this.device.createCommandEncoder();
  }

  #endPass(): void {
    this.#pass?.end();
    this.#pass = null;
  }

  dispatch(
    pipeline: GPUComputePipeline,
    params: Params | undefined,
    buffers: (Binding | null)[],
    [x, y, z]: [number, number, number],
  ): void {
    const d0 = this.timeHost ? performance.now() : 0;
    if (params && this.#arenaUsed + SLOT > ARENA_BYTES) this.flush();
    // The bind group's key first; its entries are only made when the cache misses.
    let key = `${this.#id(pipeline)}`;
    const offset = this.#arenaUsed;
    let size = 0;
    if (params) {
      if (params.fields.length * 4 > SLOT) throw new GpuError(`uniform params over ${SLOT} bytes`);
      size = writeParams(this.#arenaView, offset, params);
      this.#arenaUsed += SLOT;
      key += `|u${offset}:${size}`;
    }
    for (const b of buffers) {
      if (b === null) key += "|-";
      else if (b instanceof GPUBuffer) key += `|${this.#id(b)}:0:-1`;
      else key += `|${this.#id(b.buffer)}:${b.offset ?? 0}:${b.size ?? -1}`;
    }
    let cached = this.#bindGroups.get(key);
    if (!cached) {
      if (this.#bindGroups.size >= this.bindGroupCap) this.#evict();
      const entries: GPUBindGroupEntry[] = [];
      let binding = 0;
      if (params) {
        entries.push({ binding: binding++, resource: { buffer: this.#arena, offset, size } });
      }
      for (const b of buffers) {
        if (b !== null) {
          entries.push({ binding, resource: b instanceof GPUBuffer ? { buffer: b } : b });
        }
        binding++;
      }
      const b0 = performance.now();
      const group = this.device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries,
      });
      this.bindGroupMs += performance.now() - b0;
      this.bindGroups++;
      this.#bindGroups.set(key, cached = { group, used: 0 });
    }
    cached.used = ++this.#uses;
    const group = cached.group;
    const timed = this.profiler?.slot(pipeline.label, `${x}x${y}x${z}`);
    if (timed) {
      this.#endPass();
      this.#pass = this.#encoderNow().beginComputePass({ timestampWrites: timed });
    } else this.#pass ??= this.#encoderNow().beginComputePass();
    this.#pass.setPipeline(pipeline);
    this.#pass.setBindGroup(0, group);
    this.#pass.dispatchWorkgroups(x, y, z);
    if (timed) this.#endPass();
    this.#commands++;
    this.dispatches++;
    if (this.#early !== null && this.#commands >= this.#early && this.earlySubmits) {
      this.flush();
      this.#early = 2 * this.#early > ARENA_BYTES / SLOT ? null : 2 * this.#early;
    }
    if (this.timeHost) this.dispatchMs += performance.now() - d0;
  }

  upload(dst: GPUBuffer, data: ArrayBufferView, dstOffset: number): void {
    const bytes = new Uint8Array(data.buffer as ArrayBuffer, data.byteOffset, data.byteLength);
    const size = Math.ceil(bytes.byteLength / 4) * 4;
    if (this.#commands === 0) {
      // Nothing pending that could read dst: the queue's own write is ordered correctly.
      if (size === bytes.byteLength) this.device.queue.writeBuffer(dst, dstOffset, bytes);
      else {
        const padded = new Uint8Array(size);
        padded.set(bytes);
        this.device.queue.writeBuffer(dst, dstOffset, padded);
      }
      return;
    }
    // Pending commands may still use dst's old contents: stage the data and copy in order.
    if (size <= UPLOAD_BYTES / 4) {
      if (this.#uploadsUsed + size > UPLOAD_BYTES) {
        this.flush(); // nothing pending now: the direct write above is in order
        return this.upload(dst, data, dstOffset);
      }
      const at = this.#uploadsUsed;
      this.#uploadsCpu.set(bytes, at);
      this.#uploadsCpu.fill(0, at + bytes.byteLength, at + size); // as a fresh staging buffer
      this.#uploadsUsed += size;
      this.copy(this.#uploads, at, dst, dstOffset, size);
      return;
    }
    const staging = this.device.createBuffer({
      size,
      usage: GPUBufferUsage.COPY_SRC,
      mappedAtCreation: true,
    });
    new Uint8Array(staging.getMappedRange()).set(bytes);
    staging.unmap();
    this.#staging.push(staging);
    this.copy(staging, 0, dst, dstOffset, size);
  }

  resolve(set: GPUQuerySet, count: number, dst: GPUBuffer): void {
    this.#endPass();
    this.#encoderNow().resolveQuerySet(set, 0, count, dst, 0);
    this.#commands++;
  }

  /**
   * Records an empty pass that writes timestamp `index` of `set` at this point of the encoder, so
   * that stamps recorded around some work bracket it inside one submit (no queue gap between).
   */
  timestamp(set: GPUQuerySet, index: number): void {
    // A span submitted in pieces would time the host's recording between them as GPU time.
    this.#early = null;
    this.#endPass();
    this.#encoderNow().beginComputePass({
      timestampWrites: { querySet: set, beginningOfPassWriteIndex: index },
    }).end();
    this.#commands++;
  }

  copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, size: number): void {
    this.#endPass();
    this.#encoderNow().copyBufferToBuffer(src, srcOffset, dst, dstOffset, size);
    this.#commands++;
  }

  flush(): void {
    if (this.#failure) throw this.#failure;
    if (!this.#encoder) return;
    this.#endPass();
    if (this.#arenaUsed > 0) {
      this.device.queue.writeBuffer(this.#arena, 0, this.#arenaCpu, 0, this.#arenaUsed);
    }
    if (this.#uploadsUsed > 0) {
      this.device.queue.writeBuffer(this.#uploads, 0, this.#uploadsCpu, 0, this.#uploadsUsed);
    }
    this.device.queue.submit([this.#encoder.finish()]);
    this.submits++;
    this.#encoder = null;
    this.#commands = 0;
    this.#arenaUsed = 0;
    this.#uploadsUsed = 0;
    for (const s of this.#staging) s.destroy();
    this.#staging = [];
  }

  async read(
    ranges: { buffer: GPUBuffer; offset?: number; size: number }[],
  ): Promise<ArrayBuffer[]> {
    let total = 0;
    const offsets = ranges.map((r) => {
      const o = total;
      total += Math.ceil(r.size / 4) * 4;
      return o;
    });
    const staging = this.device.createBuffer({
      size: Math.max(4, total),
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
    ranges.forEach((r, i) =>
      this.copy(r.buffer, r.offset ?? 0, staging, offsets[i], Math.ceil(r.size / 4) * 4)
    );
    this.flush();
    this.#early = SLOW_START; // the queue is empty once the read is done
    try {
      await Promise.race([staging.mapAsync(GPUMapMode.READ), this.#lostSignal]);
      this.check();
      const all = staging.getMappedRange();
      const out = ranges.map((r, i) => all.slice(offsets[i], offsets[i] + r.size));
      staging.unmap();
      return out;
    } finally {
      staging.destroy();
    }
  }

  async idle(): Promise<void> {
    await Promise.race([this.device.queue.onSubmittedWorkDone(), this.#lostSignal]);
    this.#early = SLOW_START;
  }
}

/** One timed dispatch: its whole pipeline label and GPU timestamps (ns, the device's clock). */
export interface KernelSpan {
  kernel: string;
  /** Its workgroup grid, `XxYxZ` (tells a kernel's shapes apart). */
  grid?: string;
  begin: bigint;
  end: bigint;
}

/**
 * Per-kernel GPU time from timestamp queries: each dispatch gets its own pass writing a begin and
 * an end timestamp; `collect()` resolves them once and sums nanoseconds per pipeline label, and
 * appends each dispatch to `spans` when given one (where the GPU idled: gaps.ts).
 */
export class KernelProfiler {
  // Query sets hold at most 4096 queries (2048 timed passes); more sets are added as needed.
  #sets: { set: GPUQuerySet; labels: string[]; grids: string[] }[] = [];
  readonly totals = new Map<string, { ns: number; count: number }>();

  /** `whole`: sum per whole pipeline key (tiles, transposes, dtypes), not per shader:entry. */
  constructor(
    private readonly device: GPUDevice,
    readonly maxPasses = 65536,
    readonly whole = false,
    readonly spans: KernelSpan[] | null = null,
  ) {}

  slot(label: string, grid = ""): GPUComputePassTimestampWrites | undefined {
    let cur = this.#sets.at(-1);
    if (!cur || cur.labels.length === 2048) {
      if (this.#sets.length * 2048 >= this.maxPasses) return undefined;
      const set = this.device.createQuerySet({ type: "timestamp", count: 4096 });
      cur = { set, labels: [], grids: [] };
      this.#sets.push(cur);
    }
    const i = cur.labels.length;
    cur.labels.push(label);
    cur.grids.push(grid);
    return { querySet: cur.set, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 };
  }

  /** Resolves the pending timestamps into `totals` (call after the work was recorded). */
  async collect(recorder: Recorder): Promise<void> {
    const sets = this.#sets.filter((s) => s.labels.length > 0);
    if (sets.length === 0) return;
    const bufs = sets.map((s) => {
      const buf = this.device.createBuffer({
        size: s.labels.length * 16,
        usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
      });
      recorder.resolve(s.set, s.labels.length * 2, buf);
      return buf;
    });
    const bytes = await recorder.read(bufs.map((b) => ({ buffer: b, size: b.size })));
    sets.forEach((s, k) => {
      const t = new BigUint64Array(bytes[k]);
      s.labels.forEach((label, i) => {
        this.spans?.push({ kernel: label, grid: s.grids[i], begin: t[2 * i], end: t[2 * i + 1] });
        const key = this.whole ? label : label.split(":").slice(0, 2).join(":");
        const e = this.totals.get(key) ?? { ns: 0, count: 0 };
        e.ns += Number(t[2 * i + 1] - t[2 * i]);
        e.count++;
        this.totals.set(key, e);
      });
      bufs[k].destroy();
      s.set.destroy();
    });
    this.#sets = [];
  }
}
