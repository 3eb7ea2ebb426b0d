/**
 * Policy weights on the wire: every tensor as f16, in one blob `<header length u32><header
 * json><data>`. The header holds the version, the model config (config.json text), each
 * tensor's name, length and offset, and the SHA-256 of the data; the object store chunks the blob
 * and keeps its own digest as well.
 */
import { fromFloat32, toFloat32 } from "../io/mod.ts";
import { ChecksumError, sha256Hex } from "./protocol.ts";

/**
 * Bytes per object-store chunk of a weights blob: 4x fewer messages than the default 128 KiB,
 * still under the 1 MB max_payload of a default nats-server.
 */
export const WEIGHT_CHUNK = 512 << 10;

export interface WeightsHeader {
  version: number;
  modelConfig: string;
  tensors: { name: string; length: number; offset: number }[];
  sha256: string;
}

export interface PackedWeights {
  version: number;
  modelConfig: string;
  tensors: Map<string, Float32Array>;
}

/** Packs f32 tensors as f16 with a header. */
export async function packWeights(w: PackedWeights): Promise<Uint8Array> {
  let total = 0;
  const tensors: WeightsHeader["tensors"] = [];
  for (const [name, t] of w.tensors) {
    tensors.push({ name, length: t.length, offset: total });
    total += t.length * 2;
  }
  const data = new Uint8Array(total);
  for (const { name, offset } of tensors) {
    data.set(fromFloat32(w.tensors.get(name)!, "F16"), offset);
  }
  const header: WeightsHeader = {
    version: w.version,
    modelConfig: w.modelConfig,
    tensors,
    sha256: await sha256Hex(data),
  };
  const head = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(4 + head.length + total);
  new DataView(out.buffer).setUint32(0, head.length, true);
  out.set(head, 4);
  out.set(data, 4 + head.length);
  return out;
}

/** Unpacks a blob of packWeights back to f32 tensors; a digest mismatch is a ChecksumError. */
export async function unpackWeights(blob: Uint8Array): Promise<PackedWeights> {
  if (blob.length < 4) throw new ChecksumError("weights: blob too short");
  const headLen = new DataView(blob.buffer, blob.byteOffset).getUint32(0, true);
  const header = JSON.parse(
    new TextDecoder().decode(blob.subarray(4, 4 + headLen)),
  ) as WeightsHeader;
  const data = blob.slice(4 + headLen);
  if ((await sha256Hex(data)) !== header.sha256) {
    throw new ChecksumError(`weights v${header.version}: checksum mismatch`);
  }
  const tensors = new Map<string, Float32Array>();
  for (const { name, length, offset } of header.tensors) {
    tensors.set(name, toFloat32(data.subarray(offset, offset + 2 * length), "F16"));
  }
  return { version: header.version, modelConfig: header.modelConfig, tensors };
}
