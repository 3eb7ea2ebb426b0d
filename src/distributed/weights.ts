/**
 * Policy weights on the wire: every tensor as f16, back to back (little-endian), cut into chunks
 * of `chunkBytes` (one NATS message each, see weight_stream.ts). A version is announced by its
 * plan (the version, the trainer process's epoch, the model config (config.json text), each
 * tensor's name, length and byte offset, the total bytes and the chunk count) before its chunks
 * travel, and closed by its manifest: the plan plus each chunk's stream sequence and SHA-256.
 * Encoding converts slice by slice (f32 input) or copies (f16 input) and hands each chunk on as soon
 * as it is complete, so conversion overlaps the upload; decoding keeps the f16 bits as they arrive
 * while each chunk's digest is computed (crypto.subtle), and checks them against the manifest.
 */
import { f16ToF32Into, f32ToF16Into } from "../tensor/mod.ts";
import { ChecksumError, sha256Hex } from "./protocol.ts";

/**
 * Largest chunk: 4 MiB (`deno task nats`'s server takes 8 MB); as fast as 8 MiB on loopback, and
 * a fetch's chunks in flight stay far below the server's 64 MB per-client buffer.
 */
export const MAX_WEIGHT_CHUNK = 4 << 20;

/** Chunk size for a server accepting messages of `maxPayload` bytes (a multiple of 64 KiB). */
export function weightChunkBytes(maxPayload: number): number {
  const bytes = Math.floor(Math.min(MAX_WEIGHT_CHUNK, maxPayload) / 65536) * 65536;
  if (bytes < 65536) throw new Error(`the server's max_payload ${maxPayload} is below 64 KiB`);
  return bytes;
}

/** What a worker learns of a version before its chunks: enough to receive and decode them. */
export interface WeightsPlan {
  version: number;
  /** The trainer process that published it (jobs name the same epoch). */
  epoch: string;
  modelConfig: string;
  tensors: { name: string; length: number; offset: number }[];
  /** Bytes of f16 data in all. */
  bytes: number;
  chunkBytes: number;
  chunkCount: number;
}

export interface WeightsManifest extends WeightsPlan {
  /** In order: the stream sequence of each chunk's message and the SHA-256 of its bytes. */
  chunks: { seq: number; sha256: string }[];
}

/** Weights to publish: f32 arrays, or f16 bits (Uint16Array) sent as they are. */
export interface PackedWeights {
  version: number;
  epoch?: string;
  modelConfig: string;
  tensors: ReadonlyMap<string, Float32Array | Uint16Array>;
}

/** Received weights: every tensor as f16 bits, views into one buffer. */
export interface HalfWeights {
  version: number;
  epoch: string;
  modelConfig: string;
  tensors: Map<string, Uint16Array>;
}

/** The tensors' layout and total bytes of `tensors` as f16, back to back. */
export function weightsLayout(
  tensors: ReadonlyMap<string, { length: number }>,
): { tensors: WeightsPlan["tensors"]; bytes: number } {
  const layout: WeightsPlan["tensors"] = [];
  let bytes = 0;
  for (const [name, t] of tensors) {
    layout.push({ name, length: t.length, offset: bytes });
    bytes += 2 * t.length;
  }
  return { tensors: layout, bytes };
}

/**
 * Converts `tensors` to f16 (f16 bits are copied) and calls `onChunk` with each complete chunk in
 * order (awaited, so the caller bounds what is in flight). Returns the tensors' layout, the total
 * bytes and the seconds spent converting.
 */
export async function encodeWeights(
  tensors: ReadonlyMap<string, Float32Array | Uint16Array>,
  chunkBytes: number,
  onChunk: (index: number, bytes: Uint8Array) => Promise<void> | void,
): Promise<{ tensors: WeightsPlan["tensors"]; bytes: number; convertS: number }> {
  if (chunkBytes % 2 !== 0) throw new Error(`weights: odd chunk size ${chunkBytes}`);
  const { tensors: layout, bytes } = weightsLayout(tensors);
  const halves = new Uint16Array(bytes / 2);
  const data = new Uint8Array(halves.buffer);
  let next = 0, convertMs = 0;
  const flush = async (done: number) => {
    while (next * chunkBytes < bytes) {
      const end = Math.min(bytes, (next + 1) * chunkBytes);
      if (end > done) return;
      await onChunk(next, data.subarray(next * chunkBytes, end));
      next++;
    }
  };
  const slice = chunkBytes / 2;
  for (const { name, length, offset } of layout) {
    const src = tensors.get(name)!, at = offset / 2;
    for (let a = 0; a < length; a += slice) {
      const b = Math.min(length, a + slice), t0 = performance.now();
      if (src instanceof Uint16Array) halves.set(src.subarray(a, b), at + a);
      else f32ToF16Into(src.subarray(a, b), halves.subarray(at + a, at + b));
      convertMs += performance.now() - t0;
      await flush(2 * (at + b));
    }
  }
  await flush(bytes);
  return { tensors: layout, bytes, convertS: convertMs / 1000 };
}

/** Checks a plan's own consistency (chunk count, tensors inside the data); a ChecksumError. */
export function checkPlan(p: WeightsPlan): void {
  const want = Math.ceil(p.bytes / p.chunkBytes);
  if (p.bytes % 2 !== 0 || p.chunkBytes % 2 !== 0 || p.chunkCount !== want) {
    throw new ChecksumError(`weights v${p.version}: ${p.chunkCount} chunks for ${p.bytes} bytes`);
  }
  for (const { name, length, offset } of p.tensors) {
    if (offset % 2 !== 0 || offset + 2 * length > p.bytes) {
      throw new ChecksumError(`weights v${p.version}: tensor ${name} lies outside the data`);
    }
  }
}

/**
 * Rebuilds a version from its chunks, added in order: the f16 bits are kept as they are (no f32
 * round trip); `finish` checks every digest against the manifest.
 */
export class WeightsDecoder {
  readonly #p: WeightsPlan;
  readonly #out: Uint16Array;
  #added = 0;
  #digests: Promise<string>[] = [];
  /** Seconds spent copying and hashing (on this thread). */
  decodeS = 0;

  constructor(plan: WeightsPlan) {
    checkPlan(plan);
    this.#p = plan;
    this.#out = new Uint16Array(plan.bytes / 2);
  }

  /** Stores chunk `#added` (its digest is checked by `finish`). */
  add(data: Uint8Array): void {
    const t0 = performance.now();
    const i = this.#added++, p = this.#p;
    const start = i * p.chunkBytes, end = Math.min(p.bytes, start + p.chunkBytes);
    if (i >= p.chunkCount || data.length !== end - start) {
      throw new ChecksumError(`weights v${p.version}: chunk ${i} holds ${data.length} bytes`);
    }
    const dst = new Uint8Array(this.#out.buffer, start, end - start);
    dst.set(data);
    this.#digests.push(sha256Hex(dst));
    this.decodeS += (performance.now() - t0) / 1000;
  }

  /** The tensors, once every chunk was added and matched `manifest` (else a ChecksumError). */
  async finish(manifest: WeightsManifest): Promise<HalfWeights> {
    const p = this.#p, digests = await Promise.all(this.#digests);
    if (manifest.bytes !== p.bytes || manifest.chunks.length !== p.chunkCount) {
      throw new ChecksumError(`weights v${p.version}: the manifest differs from the plan`);
    }
    if (digests.length !== p.chunkCount) {
      throw new ChecksumError(`weights v${p.version}: ${digests.length} of ${p.chunkCount}`);
    }
    const bad = digests.findIndex((d, i) => d !== manifest.chunks[i].sha256);
    if (bad >= 0) throw new ChecksumError(`weights v${p.version}: chunk ${bad} checksum mismatch`);
    const tensors = new Map<string, Uint16Array>();
    for (const { name, length, offset } of p.tensors) {
      tensors.set(name, this.#out.subarray(offset / 2, offset / 2 + length));
    }
    return { version: p.version, epoch: p.epoch, modelConfig: p.modelConfig, tensors };
  }
}

/** f16 bits as f32 values (the one conversion a GPU without shader-f16 needs). */
export function halfToFloat(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  f16ToF32Into(bits, out);
  return out;
}
