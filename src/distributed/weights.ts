/**
 * Policy weights on the wire: every tensor as f16, back to back (little-endian), cut into chunks
 * of `chunkBytes` (one NATS message each, see weight_stream.ts). The manifest holds the version,
 * the model config (config.json text), each tensor's name, length and byte offset, and each
 * chunk's stream sequence and SHA-256. Encoding converts slice by slice and hands each chunk on as
 * soon as it is complete, so conversion overlaps the upload; decoding converts each chunk as it
 * arrives while its digest is computed off the main thread (crypto.subtle).
 */
import { f16ToF32Into, f32ToF16Into } from "../io/mod.ts";
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

export interface WeightsManifest {
  version: number;
  modelConfig: string;
  tensors: { name: string; length: number; offset: number }[];
  /** Bytes of f16 data in all. */
  bytes: number;
  chunkBytes: number;
  /** In order: the stream sequence of each chunk's message and the SHA-256 of its bytes. */
  chunks: { seq: number; sha256: string }[];
}

export interface PackedWeights {
  version: number;
  modelConfig: string;
  tensors: Map<string, Float32Array>;
}

/**
 * Converts `tensors` to f16 and calls `onChunk` with each complete chunk in order (awaited, so the
 * caller bounds what is in flight). Returns the tensors' layout and the total bytes.
 */
export async function encodeWeights(
  tensors: ReadonlyMap<string, Float32Array>,
  chunkBytes: number,
  onChunk: (index: number, bytes: Uint8Array) => Promise<void> | void,
): Promise<{ tensors: WeightsManifest["tensors"]; bytes: number }> {
  if (chunkBytes % 2 !== 0) throw new Error(`weights: odd chunk size ${chunkBytes}`);
  const layout: WeightsManifest["tensors"] = [];
  let bytes = 0;
  for (const [name, t] of tensors) {
    layout.push({ name, length: t.length, offset: bytes });
    bytes += 2 * t.length;
  }
  const halves = new Uint16Array(bytes / 2);
  const data = new Uint8Array(halves.buffer);
  let next = 0;
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
      const b = Math.min(length, a + slice);
      f32ToF16Into(src.subarray(a, b), halves.subarray(at + a, at + b));
      await flush(2 * (at + b));
    }
  }
  await flush(bytes);
  return { tensors: layout, bytes };
}

/** Rebuilds f32 tensors from a manifest's chunks, added in order; `finish` checks every digest. */
export class WeightsDecoder {
  readonly #m: WeightsManifest;
  readonly #out: Float32Array;
  #added = 0;
  #digests: Promise<string>[] = [];

  constructor(manifest: WeightsManifest) {
    this.#m = manifest;
    const want = Math.ceil(manifest.bytes / manifest.chunkBytes);
    if (manifest.bytes % 2 !== 0 || manifest.chunks.length !== want) {
      throw new ChecksumError(
        `weights v${manifest.version}: ${manifest.chunks.length} chunks for ${manifest.bytes} bytes`,
      );
    }
    this.#out = new Float32Array(manifest.bytes / 2);
  }

  /** Converts chunk `#added` (its digest is checked by `finish`). */
  add(data: Uint8Array): void {
    const i = this.#added++, m = this.#m;
    const start = i * m.chunkBytes, end = Math.min(m.bytes, start + m.chunkBytes);
    if (i >= m.chunks.length || data.length !== end - start) {
      throw new ChecksumError(`weights v${m.version}: chunk ${i} holds ${data.length} bytes`);
    }
    // A view needs 2-byte alignment; a message at an odd offset is copied once (a constructor
    // copy: the transport's Buffer.slice would share memory).
    const aligned = data.byteOffset % 2 === 0 ? data : new Uint8Array(data);
    this.#digests.push(sha256Hex(aligned));
    const halves = new Uint16Array(aligned.buffer, aligned.byteOffset, aligned.length / 2);
    f16ToF32Into(halves, this.#out.subarray(start / 2, end / 2));
  }

  /** The tensors, once every chunk was added and matched its digest (else a ChecksumError). */
  async finish(): Promise<PackedWeights> {
    const m = this.#m, digests = await Promise.all(this.#digests);
    if (digests.length !== m.chunks.length) {
      throw new ChecksumError(`weights v${m.version}: ${digests.length} of ${m.chunks.length}`);
    }
    const bad = digests.findIndex((d, i) => d !== m.chunks[i].sha256);
    if (bad >= 0) throw new ChecksumError(`weights v${m.version}: chunk ${bad} checksum mismatch`);
    const tensors = new Map<string, Float32Array>();
    for (const { name, length, offset } of m.tensors) {
      if (offset % 2 !== 0 || offset + 2 * length > m.bytes) {
        throw new ChecksumError(`weights v${m.version}: tensor ${name} lies outside the data`);
      }
      tensors.set(name, this.#out.subarray(offset / 2, offset / 2 + length));
    }
    return { version: m.version, modelConfig: m.modelConfig, tensors };
  }
}
