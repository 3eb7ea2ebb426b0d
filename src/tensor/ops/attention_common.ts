/**
 * What the attention kernels' TS ops share: the options, their validation into one geometry and
 * the uniform block (shaders/include/attention_params.wgsl) built from it, and the merge of
 * key-split partial outputs.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";

const COMBINE_WG = 256;

export interface AttentionOptions {
  /** i32 [B, S'] with S' >= kvLength: 1 = real token, 0 = padding. */
  keyMask?: Tensor;
  /** Hide keys after the query's own position (default true). */
  causal?: boolean;
  /** Query t sits at position queryOffset + t in key space (default kvLength - T). */
  queryOffset?: number;
  /** Logit scale (default 1 / sqrt(D)). */
  scale?: number;
  /** Only the first kvLength rows of k/v dim 1 are valid (a view of a larger KV cache). */
  kvLength?: number;
  /**
   * The key-parallel decode kernel (shaders/attention_decode.wgsl), for calls with a few query
   * rows per kv head that need no gradient: left out, it runs where it applies; false never
   * (the tiled forward); true always (an error where it does not apply). f16 k and v (a KV
   * cache of halves) are read by the decode kernel only.
   */
  decodeKernel?: boolean;
  /**
   * "f16": torch autocast's fp16 attention (mixed-precision training): q, k, v and the backward's
   * dO are rounded to halves, P before P V and P^T dO, dS before dQ and dK; the scores, the
   * softmax, lse and every product's accumulation stay f32. out and the gradients are f32
   * tensors holding halves (torch's are f16). Runs on the GEMM path only. Default "f32".
   */
  precision?: AttentionPrecision;
}

export type AttentionPrecision = "f32" | "f16";

const MAX_D = 128;

export interface Geometry {
  B: number;
  T: number;
  S: number;
  L: number;
  Hq: number;
  Hkv: number;
  D: number;
  G: number;
  off: number;
  scale: number;
  causal: boolean;
  mask: Tensor | undefined;
  /** k and v hold IEEE halves (a KV cache of halves), read by the decode kernel only. */
  packed: boolean;
  /** precision "f16": rounded to halves where torch's fp16 attention is. */
  half: boolean;
}

function describe(name: string, t: Tensor | undefined): string {
  return t ? `${name} ${fmtShape(t.shape)} ${t.dtype}` : `${name} none`;
}

export function validate(q: Tensor, k: Tensor, v: Tensor, o: AttentionOptions): Geometry {
  // Described only on failure: attention runs once per layer of every decode step.
  const fail = (why: string): never => {
    const all = [
      describe("q", q),
      describe("k", k),
      describe("v", v),
      describe("keyMask", o.keyMask),
    ]
      .join(", ");
    throw new Error(`attention: ${why} (${all})`);
  };
  const packed = k.dtype === "f16";
  if (q.dtype !== "f32" || k.dtype !== v.dtype || (k.dtype !== "f32" && !packed)) {
    fail("q must be f32, k and v both f32 or both f16 (a KV cache of halves)");
  }
  if (q.rank !== 4 || k.rank !== 4 || v.rank !== 4) {
    fail("expected q [B, T, Hq, D], k and v [B, S, Hkv, D]");
  }
  const [B, T, Hq, D] = q.shape;
  const [Bk, S, Hkv, Dk] = k.shape;
  if (k.shape.some((d, i) => d !== v.shape[i])) fail("k and v shapes differ");
  if (Bk !== B || Dk !== D) fail("batch or head size of q and k differ");
  if (Hkv === 0 || Hq % Hkv !== 0) fail("Hq must be a multiple of Hkv");
  if (D < 1 || D > MAX_D) fail(`head size must be in [1, ${MAX_D}]`);
  if (packed && D % 4 !== 0) fail("f16 k and v need a head size that is a multiple of 4");
  const L = o.kvLength ?? S;
  if (!Number.isInteger(L) || L < 0 || L > S) fail(`kvLength ${L} must be an integer in [0, ${S}]`);
  const off = o.queryOffset ?? L - T;
  if (!Number.isInteger(off)) fail(`queryOffset ${off} must be an integer`);
  const scale = o.scale ?? 1 / Math.sqrt(D);
  if (!Number.isFinite(scale)) fail(`scale ${scale} must be finite`);
  const m = o.keyMask;
  if (m && (m.dtype !== "i32" || m.rank !== 2 || m.shape[0] !== B || m.shape[1] < L)) {
    fail(`keyMask must be i32 [B, S'] with S' >= kvLength ${L}`);
  }
  const causal = o.causal ?? true;
  const precision = o.precision ?? "f32";
  if (precision !== "f32" && precision !== "f16") fail(`precision "${precision}": f32 or f16`);
  const half = precision === "f16";
  if (half && (packed || o.decodeKernel === true)) {
    fail("precision f16 runs on the GEMM path: not with f16 k and v or decodeKernel true");
  }
  return { B, T, S, L, Hq, Hkv, D, G: Hq / Hkv, off, scale, causal, mask: m, packed, half };
}

export function paramFields(g: Geometry): (number | { f32: number } | { i32: number })[] {
  return [
    g.B,
    g.T,
    g.S,
    g.L,
    g.Hq,
    g.Hkv,
    g.G,
    { i32: g.off },
    { f32: g.scale },
    g.causal ? 1 : 0,
    g.mask ? 1 : 0,
    g.mask ? g.mask.shape[1] : 0,
    g.T * g.G,
  ];
}

export function floatsFit(floats: number): boolean {
  return floats * 4 <= gpu().limits.maxComputeWorkgroupStorageSize;
}

/**
 * CPU adapters (llvmpipe) spend seconds compiling the zero-initialisation of large workgroup
 * arrays, and gain nothing from big tiles: give them the smallest.
 */
export function smallTiles(): boolean {
  return gpu().adapter.info?.isFallbackAdapter === true;
}

/**
 * Partial outputs of `nsplit` key splits, oPart [nsplit, B, T, Hq, D] and lsePart
 * [nsplit, B, Hq, T], merged into out [B, T, Hq, D] and lse [B, Hq, T] (attention_combine); the
 * parts are disposed.
 */
export function combineSplits(
  g: Geometry,
  parts: { o: Tensor; lse: Tensor; nsplit: number },
  out: Tensor,
  lse: Tensor,
): void {
  gpu().dispatch({ shader: "attention_combine", defines: { WG: COMBINE_WG } }, {
    params: packParams([out.size, parts.nsplit, g.T, g.Hq, g.D]),
    buffers: [parts.o.buffer, parts.lse.buffer, out.buffer, lse.buffer],
    workgroups: grid1d(out.size, COMBINE_WG),
  });
  parts.o.dispose();
  parts.lse.dispose();
}

/** Empty partial outputs of `nsplit` key splits for combineSplits. */
export function splitParts(
  g: Geometry,
  nsplit: number,
): { o: Tensor; lse: Tensor; nsplit: number } {
  const o = Tensor.empty([nsplit, g.B, g.T, g.Hq, g.D], "f32", "attention.o_part");
  const lse = Tensor.empty([nsplit, g.B, g.Hq, g.T], "f32", "attention.lse_part");
  return { o, lse, nsplit };
}
