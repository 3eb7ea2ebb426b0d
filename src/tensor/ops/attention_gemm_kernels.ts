/**
 * The small kernels of the GEMM attention path (attention_gemm.ts): the head packing between the
 * op layout and the per-(batch, kv head) matrices the batched GEMMs multiply, the masked softmax
 * that writes the row logsumexp, and the backward's P / dS row kernel.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import type { Tensor } from "../tensor.ts";
import type { Geometry } from "./attention_common.ts";
import { grid1d, rowDefines } from "./grid.ts";

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

function packDispatch(entry: "pack" | "unpack", src: Tensor, dst: Tensor, h: HeadPacking) {
  const count = h.nb * h.G * (entry === "pack" ? h.n : h.R) * h.D;
  gpu().dispatch({ shader: "attention_gemm_pack", entry, defines: { WG: PACK_WG } }, {
    params: packParams([h.c0, h.nb, h.Hkv, h.G, h.n, h.R, h.D, h.parts ?? 1]),
    buffers: [src.buffer, dst.buffer],
    workgroups: grid1d(count, PACK_WG),
  });
}

/** dst [nb, G * n, D] (row g * n + r) <- positions r < n of the pairs' heads of src [B, R, H, D]. */
export function packHeads(src: Tensor, dst: Tensor, h: HeadPacking): void {
  packDispatch("pack", src, dst, h);
}

/**
 * The pairs' heads of dst [B, R, H, D] <- src [nb, G * n, D] (summed over `parts` partials when
 * src is [nb, parts, G * n, D]); positions n .. R - 1 get zeros.
 */
export function unpackHeads(src: Tensor, dst: Tensor, h: HeadPacking): void {
  packDispatch("unpack", src, dst, h);
}

/** Which pairs a score matrix [nb, G * T, L] holds. */
export interface ScoreChunk {
  c0: number;
  nb: number;
}

function rowParams(g: Geometry, c: ScoreChunk): ArrayBuffer {
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

/**
 * scores [nb, G * T, L] (Qg K^T) become in place the masked softmax of scale * scores; lse
 * [B, Hq, T] (or the first half of the op's stats) gets each row's logsumexp, NEG for a row that
 * sees no key (then all zeros). `dummy`: any buffer not written here, bound when there is no mask.
 */
export function maskedSoftmax(
  g: Geometry,
  c: ScoreChunk,
  io: { scores: Tensor; lse: Tensor; dummy: Tensor },
): void {
  const rows = c.nb * g.G * g.T;
  gpu().dispatch({ shader: "attention_gemm_softmax", defines: rowDefines(g.L) }, {
    params: rowParams(g, c),
    buffers: [io.scores.buffer, null, io.lse.buffer, (g.mask ?? io.dummy).buffer],
    workgroups: grid1d(rows, 1),
  });
}

/**
 * From scores (Qg K^T), lse and dp (dOg V^T), each [nb, G * T, L]: scores become P and dp becomes
 * dS = scale * P * (dP - delta), delta = dO . O per query row (out and dout [B, T, Hq, D]).
 */
export function softmaxGrad(
  g: Geometry,
  c: ScoreChunk,
  io: { scores: Tensor; dp: Tensor; lse: Tensor; out: Tensor; dout: Tensor; dummy: Tensor },
): void {
  const rows = c.nb * g.G * g.T;
  gpu().dispatch({ shader: "attention_gemm_grad", defines: rowDefines(g.L) }, {
    params: rowParams(g, c),
    buffers: [
      io.scores.buffer,
      io.dp.buffer,
      io.lse.buffer,
      (g.mask ?? io.dummy).buffer,
      io.out.buffer,
      io.dout.buffer,
    ],
    workgroups: grid1d(rows, 1),
  });
}
