/**
 * The decode forward of `attention`: a few query rows per (batch, kv head) against a long key
 * range, parallel over keys (shaders/attention_decode.wgsl), the key range split over
 * workgroups and merged by attention_combine.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import type { Tensor } from "../tensor.ts";
import {
  combineSplits,
  floatsFit,
  type Geometry,
  paramFields,
  smallTiles,
  splitParts,
} from "./attention_common.ts";

/** Most query rows (T * G) per (batch, kv head) the decode kernel takes when left to choose. */
export const DECODE_MAX_ROWS = 16;
const CPU_CHUNK = 32; // CPU adapters compile workgroup arrays slowly and gain nothing from size

/**
 * How the decode kernel splits the key range over workgroups. Mutable for benchmarks. One H100
 * (2026-11-27, 0.5B, f16 weights and KV cache, 128 + 256, `generate_device.ts`, alternated twice):
 * at B 64 (128 (row, kv head) pairs) one split of up to 512 keys took 5.28 / 5.27 ms per step, of
 * up to 256 keys 5.36 / 5.39, splits of 64 keys with their combine pass (512 workgroups aimed at)
 * 5.45 / 5.43; at B 256 splits of up to 512 keys took 13.83 / 13.80 ms, of up to 256 13.50 / 13.51.
 */
export const decodePolicy = {
  /** Keys per split are halved (from maxChunk) while fewer workgroups than this would run. */
  targetWorkgroups: 128,
  /** Fewest keys per split on a GPU. */
  minChunk: 64,
  /** Most keys per split on a GPU (the workgroup's score array holds rows x chunk floats). */
  maxChunk: 256,
  /** Most keys per split where the (row, kv head) pairs are no more than the multiprocessors. */
  soloChunk: 512,
  /** Invocations per workgroup (the device's limit permitting). */
  maxInvocations: 256,
  /**
   * A larger workgroup (0: none), taken where each key-parallel group of its P @ V pass still
   * walks at least `minKeysPerGroup` keys. One H100 (2026-11-27, 0.5B, f16 KV cache, 128 + 128,
   * `profile_generate.ts --attn-wg`): at B 256 (one split of up to 256 keys) 512 invocations took
   * the kernel from 1.65 to 1.43 ms per step; at B 64 (splits of 64 keys) from 0.564 to 0.662.
   */
  wideInvocations: 512,
  minKeysPerGroup: 32,
  /**
   * vec4s of a k row the score pass loads before using them (4, 8 or 16). Same H100 and runs: 16
   * and 8 gave 1.65 and 1.70 ms per step at B 256, 0.564 and 0.567 at B 64 (one load after
   * another, before: 1.95 and 0.573).
   */
  loadGroup: 16,
};

interface DecodeShape {
  wg: number;
  rows: number;
  chunk: number;
  nsplit: number;
}

function invocations(): number {
  return Math.min(decodePolicy.maxInvocations, gpu().limits.maxComputeInvocationsPerWorkgroup);
}

/** Invocations per workgroup for `rc` (row, column group) pairs: all a GPU gives, few on a CPU. */
function workgroupSize(rc: number): number {
  const most = invocations();
  if (!smallTiles()) return most;
  let wg = 32;
  while (wg < rc && wg < most) wg *= 2;
  return wg;
}

/** Workgroup words of the kernel's arrays (qs, ss, red, rowm/rowl, pv, offs) for `chunk` keys. */
function sharedFloats(rows: number, d4: number, wg: number, chunk: number): number {
  const rc = rows * d4;
  const ml = Math.min(Math.floor(wg / rows), 32);
  return 4 * rows * (d4 + 1) + rows * chunk + rows * ml + 2 * rows +
    4 * Math.floor(wg / rc) * rc + chunk;
}

export function shapeFor(g: Geometry): DecodeShape | null {
  const rows = g.T * g.G;
  const d4 = Math.ceil(g.D / 4);
  const wg = workgroupSize(rows * d4);
  if (rows * d4 > wg) return null;
  const groups = g.B * g.Hkv, mp = gpu().multiprocessors;
  const p = decodePolicy;
  let chunk = smallTiles() ? CPU_CHUNK : mp !== null && groups <= mp ? p.soloChunk : p.maxChunk;
  while (chunk > 16 && !floatsFit(sharedFloats(rows, d4, wg, chunk))) chunk /= 2;
  if (!floatsFit(sharedFloats(rows, d4, wg, chunk))) return null;
  while (chunk > p.minChunk && groups * Math.ceil(g.L / chunk) < p.targetWorkgroups) chunk /= 2;
  const nsplit = Math.max(1, Math.ceil(g.L / chunk));
  if (nsplit > gpu().limits.maxComputeWorkgroupsPerDimension) return null;
  return { wg: widerGroup(rows, d4, chunk, Math.min(chunk, g.L)) ?? wg, rows, chunk, nsplit };
}

/** `decodePolicy.wideInvocations` where its P @ V groups keep enough of a split's keys each. */
function widerGroup(rows: number, d4: number, chunk: number, keys: number): number | null {
  const p = decodePolicy;
  const wide = Math.min(p.wideInvocations, gpu().limits.maxComputeInvocationsPerWorkgroup);
  if (smallTiles() || wide <= invocations()) return null;
  const groups = Math.floor(wide / (rows * d4));
  const fits = floatsFit(sharedFloats(rows, d4, wide, chunk));
  return fits && groups > 0 && keys / groups >= p.minKeysPerGroup ? wide : null;
}

/**
 * Whether `attention` runs the decode kernel: `choice` (AttentionOptions.decodeKernel) true
 * demands it (as f16 k and v do), false refuses it; left out, it runs for no-gradient calls of
 * at most DECODE_MAX_ROWS rows per kv head that it can hold.
 */
export function decodeApplies(g: Geometry, noGrad: boolean, choice: boolean | undefined): boolean {
  const why = g.packed ? "f16 k and v" : "decodeKernel true";
  if (g.packed && choice === false) {
    throw new Error(
      "attention: f16 k and v are read by the decode kernel only (decodeKernel false)",
    );
  }
  if (choice === false) return false;
  const fits = shapeFor(g) !== null;
  if (choice === true || g.packed) {
    if (!noGrad) throw new Error(`attention: ${why} needs a call without gradients`);
    if (!fits) {
      throw new Error(
        `attention: ${why}, but T * G = ${g.T * g.G} rows of head size ${g.D} do not ` +
          `fit one workgroup of ${invocations()} invocations`,
      );
    }
    return true;
  }
  return noGrad && fits && g.T * g.G <= DECODE_MAX_ROWS;
}

/**
 * out [B, T, Hq, D] and lse [B, Hq, T] (the first B * Hq * T values of `res.lse`). `paged`: k and
 * v are block pools and g.mask the [B, 1 + blocks] table of lengths and block ids
 * (paged_attention.ts).
 */
export function dispatchDecode(
  g: Geometry,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  res: { out: Tensor; lse: Tensor },
  paged = false,
): void {
  const { wg, rows, chunk, nsplit } = shapeFor(g)!;
  const spec = {
    shader: "attention_decode",
    defines: {
      D: g.D,
      R: rows,
      CH: chunk,
      WG: wg,
      PACKED: g.packed,
      PAGED: paged,
      KG_MAX: decodePolicy.loadGroup,
    },
  };
  const params = packParams([...paramFields(g), nsplit, chunk, 0]);
  const maskBuf = g.mask?.buffer ?? k.buffer;
  const workgroups: [number, number, number] = [nsplit, g.Hkv, g.B];
  if (nsplit === 1) {
    gpu().dispatch(spec, {
      params,
      buffers: [q.buffer, k.buffer, v.buffer, maskBuf, res.out.buffer, res.lse.buffer],
      workgroups,
    });
    return;
  }
  const parts = splitParts(g, nsplit);
  gpu().dispatch(spec, {
    params,
    buffers: [q.buffer, k.buffer, v.buffer, maskBuf, parts.o.buffer, parts.lse.buffer],
    workgroups,
  });
  combineSplits(g, parts, res.out, res.lse);
}
