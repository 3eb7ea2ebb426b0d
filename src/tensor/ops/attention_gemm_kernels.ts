/**
 * The small kernels of the GEMM attention path (attention_gemm.ts): the head packing between the
 * op layout and the per-(batch, kv head) matrices the batched GEMMs multiply, the masked softmax
 * that writes the row logsumexp, and the backward's P / dS row kernel.
 */
import { type Defines, gpu, packParams, type Params } from "../../gpu/mod.ts";
import type { Tensor } from "../tensor.ts";
import type { Geometry } from "./attention_common.ts";
import { grid1d, multiRowDefines } from "./grid.ts";

const PACK_WG = 256;

/**
 * Pairs bh = c0 .. c0 + nb - 1 (bh = b * Hkv + hk) of an operand laid out [B, R, Hkv * G, D]:
 * G query heads per kv head (1 for k and v), `n` <= R positions in the packed [nb, G * n, D].
 */
export interface HeadPacking {
  c0: number;
  nb: number;
  Hkv: number;
  G: number;
  n: number;
  R: number;
  D: number;
  /** unpack: the source holds this many partial results per element, [nb, parts, G * n, D]. */
  parts?: number;
}

type PackEntry = "pack" | "pack_half" | "unpack";

function packDispatch(entry: PackEntry, src: Tensor, dst: Tensor, h: HeadPacking, round = false) {
  const count = h.nb * h.G * (entry === "unpack" ? h.R : h.n) * h.D;
  const invocations = entry === "pack_half" ? Math.ceil(count / 2) : count; // a word each
  const defines: Defines = round ? { WG: PACK_WG, ROUND: true } : { WG: PACK_WG };
  gpu().dispatch({ shader: "attention_gemm_pack", entry, defines }, {
    params: packParams([h.c0, h.nb, h.Hkv, h.G, h.n, h.R, h.D, h.parts ?? 1]),
    buffers: [src.buffer, dst.buffer],
    workgroups: grid1d(invocations, PACK_WG),
  });
}

/**
 * dst [nb, G * n, D] (row g * n + r) <- positions r < n of the pairs' heads of src [B, R, H, D]
 * (f32). An f16 dst gets them rounded to halves; `round` rounds them into an f32 dst as well.
 */
export function packHeads(src: Tensor, dst: Tensor, h: HeadPacking, round = false): void {
  if (src.dtype !== "f32" || (dst.dtype !== "f32" && dst.dtype !== "f16")) {
    throw new Error(`attention: packs f32 into f32 or f16, got ${src.dtype} -> ${dst.dtype}`);
  }
  if (dst.dtype === "f16") packDispatch("pack_half", src, dst, h);
  else packDispatch("pack", src, dst, h, round);
}

/**
 * The pairs' heads of dst [B, R, H, D] <- src [nb, G * n, D] (summed over `parts` partials when
 * src is [nb, parts, G * n, D]), each rounded to a half with `round`; positions n .. R - 1 get
 * zeros. Both f32.
 */
export function unpackHeads(src: Tensor, dst: Tensor, h: HeadPacking, round = false): void {
  packDispatch("unpack", src, dst, h, round);
}

/** Which pairs a score matrix [nb, G * T, L] holds. */
export interface ScoreChunk {
  c0: number;
  nb: number;
}

function rowParams(g: Geometry, c: ScoreChunk): Params {
  return packParams([
    c.c0,
    c.nb * g.G * g.T,
    g.T,
    g.L,
    g.Hkv,
    g.G,
    { i32: g.off },
    { f32: g.scale },
    g.causal ? 1 : 0,
    g.mask ? 1 : 0,
    g.mask ? g.mask.shape[1] : 0,
    g.D,
  ]);
}

/** The row kernels' defines (several rows a workgroup; HALF under f16 precision) and grid. */
function rowKernel(g: Geometry, rows: number): { defines: Defines; workgroups: [number, number] } {
  const shape = multiRowDefines(g.L);
  return {
    defines: g.half ? { ...shape, HALF: true } : shape,
    workgroups: grid1d(rows, shape.WG / shape.TPR),
  };
}

/**
 * scores [nb, G * T, L] (Qg K^T) become in place the masked softmax of scale * scores (rounded to
 * halves under f16 precision); lse [B, Hq, T] (or the first half of the op's stats) gets each
 * row's logsumexp, NEG for a row that sees no key (then all zeros). `dummy`: any buffer not
 * written here, bound when there is no mask.
 */
export function maskedSoftmax(
  g: Geometry,
  c: ScoreChunk,
  io: { scores: Tensor; lse: Tensor; dummy: Tensor },
): void {
  const { defines, workgroups } = rowKernel(g, c.nb * g.G * g.T);
  gpu().dispatch({ shader: "attention_gemm_softmax", defines }, {
    params: rowParams(g, c),
    buffers: [io.scores.buffer, null, io.lse.buffer, (g.mask ?? io.dummy).buffer],
    workgroups,
  });
}

/**
 * From scores (Qg K^T), lse and dp (dOg V^T), each [nb, G * T, L]: scores become P and dp becomes
 * dS = scale * P * (dP - delta), delta = dO . O per query row (out and dout [B, T, Hq, D]).
 * Under f16 precision P, dS before the scale and the factors of delta are rounded to halves.
 */
export function softmaxGrad(
  g: Geometry,
  c: ScoreChunk,
  io: { scores: Tensor; dp: Tensor; lse: Tensor; out: Tensor; dout: Tensor; dummy: Tensor },
): void {
  const { defines, workgroups } = rowKernel(g, c.nb * g.G * g.T);
  gpu().dispatch({ shader: "attention_gemm_grad", defines }, {
    params: rowParams(g, c),
    buffers: [
      io.scores.buffer,
      io.dp.buffer,
      io.lse.buffer,
      (g.mask ?? io.dummy).buffer,
      io.out.buffer,
      io.dout.buffer,
    ],
    workgroups,
  });
}
