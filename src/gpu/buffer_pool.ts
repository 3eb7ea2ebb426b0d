import { formatBytes, GpuError } from "./errors.ts";

/**
 * Recycles storage buffers by size class. Buffers are rounded up to a size class (powers of two
 * split in quarters) so that tensors of slightly different sizes share buffers. Returning a buffer
 * while commands that use it are still pending is safe: WebGPU runs a queue's work in order, and
 * every CPU write goes through the same queue.
 * A class hands out its oldest free buffer, not the last returned: the same free set then gives a
 * repeated pass (a decode step) the same buffers whatever order the last pass returned them in,
 * so the recorder finds its bind groups again instead of making new ones.
 */
export class BufferPool {
  /** Free buffers by size class, newest first (the oldest pops). */
  #free = new Map<number, GPUBuffer[]>();
  #serial = new WeakMap<GPUBuffer, number>();
  #made = 0;
  #inUseBytes = 0;
  #peakBytes = 0;
  #reservedBytes = 0; // every buffer the pool holds, in use or free (torch's "reserved")
  #peakReservedBytes = 0;

  constructor(
    private readonly device: GPUDevice,
    private readonly maxBufferSize: number,
    private readonly usage: GPUBufferUsageFlags = GPUBufferUsage.STORAGE |
      GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
  ) {}

  /** Size class for a byte count: at least 16 bytes, then 4 steps per power of two. */
  static sizeClass(bytes: number): number {
    const b = Math.max(16, Math.ceil(bytes / 4) * 4);
    const p = 2 ** Math.floor(Math.log2(b));
    if (p === b) return b;
    const step = Math.max(4, p / 4);
    return Math.ceil(b / step) * step;
  }

  acquire(bytes: number, label = "tensor"): GPUBuffer {
    const size = BufferPool.sizeClass(bytes);
    if (size > this.maxBufferSize) {
      throw new GpuError(
        `buffer "${label}" of ${formatBytes(bytes)} exceeds the device limit maxBufferSize ` +
          `(${formatBytes(this.maxBufferSize)})`,
      );
    }
    const list = this.#free.get(size);
    let buf = list?.pop();
    if (!buf) {
      buf = this.device.createBuffer({ size, usage: this.usage, label });
      this.#serial.set(buf, this.#made++);
      this.#reservedBytes += size;
      this.#peakReservedBytes = Math.max(this.#peakReservedBytes, this.#reservedBytes);
    }
    this.#inUseBytes += size;
    this.#peakBytes = Math.max(this.#peakBytes, this.#inUseBytes);
    return buf;
  }

  release(buf: GPUBuffer): void {
    this.#inUseBytes -= buf.size;
    let list = this.#free.get(buf.size);
    if (!list) this.#free.set(buf.size, list = []);
    // Free lists are short: walk from the oldest end to the first newer buffer.
    const serial = this.#serial.get(buf) ?? -1;
    let at = list.length;
    while (at > 0 && (this.#serial.get(list[at - 1]) ?? -1) < serial) at--;
    list.splice(at, 0, buf);
  }

  /** Destroys every free buffer (after a phase that used unusual sizes). */
  trim(): void {
    for (const list of this.#free.values()) {
      for (const b of list) {
        this.#reservedBytes -= b.size;
        b.destroy();
      }
    }
    this.#free.clear();
  }

  get inUseBytes(): number {
    return this.#inUseBytes;
  }
  get peakBytes(): number {
    return this.#peakBytes;
  }
  /** Bytes of every buffer the pool holds (in use or free for reuse). */
  get reservedBytes(): number {
    return this.#reservedBytes;
  }
  get peakReservedBytes(): number {
    return this.#peakReservedBytes;
  }
  resetPeak(): void {
    this.#peakBytes = this.#inUseBytes;
    this.#peakReservedBytes = this.#reservedBytes;
  }
}
