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
 * How the decode kernel splits the key range over workgroups. Mutable for benchmarks: on an H100
 * (2026-11-27, 0.5B, B 64) 64, 32 and 16 keys at least gave 6.47, 6.45 and 6.44 ms per decode step.
 */
export const decodePolicy = {
  /** Keys per split are halved (from 256) while fewer workgroups than this would run. */
  targetWorkgroups: 512,
  /** Fewest keys per split on a GPU. */
  minChunk: 64,
  /** Most keys per split on a GPU (the workgroup's score array holds rows x chunk floats). */
  maxChunk: 256,
};

interface DecodeShape {
  wg: number;
  rows: number;
  chunk: number;
  nsplit: number;
}

function invocations(): number {
  return Math.min(256, gpu().limits.maxComputeInvocationsPerWorkgroup);
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
  let chunk = smallTiles() ? CPU_CHUNK : decodePolicy.maxChunk;
  while (chunk > 16 && !floatsFit(sharedFloats(rows, d4, wg, chunk))) chunk /= 2;
  if (!floatsFit(sharedFloats(rows, d4, wg, chunk))) return null;
  const groups = g.B * g.Hkv;
  while (
    chunk > decodePolicy.minChunk && groups * Math.ceil(g.L / chunk) < decodePolicy.targetWorkgroups
  ) chunk /= 2;
  const nsplit = Math.max(1, Math.ceil(g.L / chunk));
  if (nsplit > gpu().limits.maxComputeWorkgroupsPerDimension) return null;
  return { wg, rows, chunk, nsplit };
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
    defines: { D: g.D, R: rows, CH: chunk, WG: wg, PACKED: g.packed, PAGED: paged },
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
