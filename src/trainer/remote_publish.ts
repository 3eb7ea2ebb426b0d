/**
 * The actor's weights read back for publication. The copies are recorded at once, in queue order
 * (later updates cannot change what is published); with shader-f16 each f32 parameter is first
 * cast to f16 on the GPU, so half the bytes cross the bus and the publisher only copies. The
 * mappable staging buffer and the host buffer are reused between versions (the host buffer comes
 * back from the publishing thread through `recycle`) instead of allocating ~2 GB each time.
 */
import { gpu } from "../gpu/mod.ts";
import { cast, noGrad, type Tensor } from "../tensor/mod.ts";

export interface Readback {
  tensors: Map<string, Float32Array | Uint16Array>;
  /** Seconds from recording the copies to the arrays on the host. */
  seconds: number;
}

export class WeightReadback {
  #staging: GPUBuffer[] = [];
  #host: ArrayBuffer[] = [];

  /** `castOnGpu`: convert f32 parameters to f16 before the readback (needs shader-f16). */
  constructor(readonly castOnGpu = gpu().hasF16) {
    if (castOnGpu && !gpu().hasF16) throw new Error("castOnGpu needs shader-f16");
  }

  /** Takes back a host buffer the publisher is done with. */
  recycle(buffers: ArrayBuffer[]): void {
    this.#host.push(...buffers.filter((b) => b.byteLength > 0 && !b.detached));
    this.#host.splice(0, this.#host.length - 2);
  }

  /**
   * Records the copies of `params` now; resolves with their values on the host. The staging
   * buffer is mapped once `mapAfter` resolves: copying a model out of mapped memory holds the
   * thread for a while, better spent where the GPU has queued work than where it waits for it.
   */
  read(params: Map<string, Tensor>, o: { mapAfter?: Promise<void> } = {}): Promise<Readback> {
    const t0 = performance.now(), g = gpu();
    const entries = [...params];
    let total = 0;
    const layout = entries.map(([name, t]) => {
      const half = t.dtype === "f16" || (this.castOnGpu && t.dtype === "f32");
      const bytes = t.size * (half ? 2 : 4), at = total;
      total += Math.ceil(bytes / 4) * 4; // copies move whole 4-byte words
      return { name, t, half, bytes, at };
    });
    const size = Math.max(4, total);
    const staging = this.#takeStaging(size);
    const casts: Tensor[] = [];
    noGrad(() => {
      for (const { t, half, bytes, at } of layout) {
        const src = half && t.dtype === "f32" ? cast(t, "f16") : t;
        if (src !== t) casts.push(src);
        g.copy(src.buffer, 0, staging, at, Math.ceil(bytes / 4) * 4);
      }
    });
    g.flush();
    for (const c of casts) c.dispose();
    return (async () => {
      try {
        await o.mapAfter;
        await staging.mapAsync(GPUMapMode.READ);
        g.throwIfFailed();
        const host = this.#takeHost(size);
        new Uint8Array(host).set(new Uint8Array(staging.getMappedRange(), 0, size));
        staging.unmap();
        const tensors = new Map<string, Float32Array | Uint16Array>();
        for (const { name, t, half, at } of layout) {
          tensors.set(
            name,
            half ? new Uint16Array(host, at, t.size) : new Float32Array(host, at, t.size),
          );
        }
        return { tensors, seconds: (performance.now() - t0) / 1000 };
      } finally {
        if (staging.mapState === "mapped") staging.unmap();
        this.#giveStaging(staging);
      }
    })();
  }

  #takeStaging(size: number): GPUBuffer {
    const i = this.#staging.findIndex((b) => b.size === size);
    if (i >= 0) return this.#staging.splice(i, 1)[0];
    return gpu().device.createBuffer({
      size,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      label: "weights readback",
    });
  }

  #giveStaging(b: GPUBuffer): void {
    this.#staging.push(b);
    // Two at most (one being read while the next version's copies are recorded).
    while (this.#staging.length > 2) this.#staging.shift()!.destroy();
  }

  #takeHost(size: number): ArrayBuffer {
    const i = this.#host.findIndex((b) => b.byteLength === size);
    return i >= 0 ? this.#host.splice(i, 1)[0] : new ArrayBuffer(size);
  }

  dispose(): void {
    for (const b of this.#staging) b.destroy();
    this.#staging = [];
    this.#host = [];
  }
}
