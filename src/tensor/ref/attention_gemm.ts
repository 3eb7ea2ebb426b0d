/**
 * CPU references for the small kernels of the GEMM attention path (shaders/attention_gemm_*.wgsl):
 * the head packing, the masked softmax with its row logsumexp, and the backward's P / dS rows.
 * The whole path is also checked against `attentionRef` (ref/attention.ts), and under f16
 * precision against `attentionF16Ref` (ref/attention_f16.ts).
 */
import { roundToF16 } from "../half.ts";

/** As HeadPacking in ops/attention_gemm_kernels.ts: pairs c0 .. c0 + nb - 1 of [B, R, Hkv * G, D]. */
export interface PackRefDims {
  c0: number;
  nb: number;
  Hkv: number;
  G: number;
  n: number;
  R: number;
  D: number;
  /** unpack: partial results per element in the packed source, [nb, parts, G * n, D]. */
  parts?: number;
  /** pack, unpack: round to the nearest half (f16 precision). */
  half?: boolean;
}

function wide(p: PackRefDims, bh: number, g: number, r: number, col: number): number {
  const b = Math.floor(bh / p.Hkv), hk = bh % p.Hkv;
  return ((b * p.R + r) * p.Hkv * p.G + hk * p.G + g) * p.D + col;
}

/** [nb, G * n, D]: row g * n + r is position r of head hk * G + g of pair c0 + j. */
export function packHeadsRef(src: ArrayLike<number>, p: PackRefDims): Float32Array {
  const out = new Float32Array(p.nb * p.G * p.n * p.D);
  for (let j = 0; j < p.nb; j++) {
    for (let g = 0; g < p.G; g++) {
      for (let r = 0; r < p.n; r++) {
        for (let c = 0; c < p.D; c++) {
          const x = src[wide(p, p.c0 + j, g, r, c)];
          out[((j * p.G + g) * p.n + r) * p.D + c] = p.half ? roundToF16(x) : x;
        }
      }
    }
  }
  return out;
}

/**
 * `dst` (the op layout) with the pairs' heads replaced by `packed` (summed over its `parts`
 * partials, then rounded to a half with `half`), zero at positions >= n.
 */
export function unpackHeadsRef(
  packed: ArrayLike<number>,
  dst: ArrayLike<number>,
  p: PackRefDims,
): Float32Array {
  const out = Float32Array.from(dst);
  for (let j = 0; j < p.nb; j++) {
    for (let g = 0; g < p.G; g++) {
      for (let r = 0; r < p.R; r++) {
        for (let c = 0; c < p.D; c++) {
          let v = 0;
          for (let q = 0; r < p.n && q < (p.parts ?? 1); q++) {
            v += packed[(((j * (p.parts ?? 1) + q) * p.G + g) * p.n + r) * p.D + c];
          }
          out[wide(p, p.c0 + j, g, r, c)] = p.half ? roundToF16(v) : v;
        }
      }
    }
  }
  return out;
}

/** The geometry the row kernels see (the op's validated options) and the chunk of pairs. */
export interface RowRefDims {
  c0: number;
  nb: number;
  T: number;
  L: number;
  Hkv: number;
  G: number;
  off: number;
  scale: number;
  causal: boolean;
  /** [B, maskStride], 1 = real key. */
  keyMask?: ArrayLike<number>;
  maskStride?: number;
  /** f16 precision: the kernels round P, dS and delta's factors to halves. */
  half?: boolean;
}

/** Row `row` of the chunk: its pair, query position, index in lse [B, Hq, T], visibility. */
function rowInfo(d: RowRefDims, row: number) {
  const gt = d.G * d.T, bh = d.c0 + Math.floor(row / gt), t = (row % gt) % d.T;
  const b = Math.floor(bh / d.Hkv);
  const visible = (s: number) =>
    (!d.keyMask || d.keyMask[b * (d.maskStride ?? d.L) + s] !== 0) && (!d.causal || s <= d.off + t);
  return { bh, t, g: Math.floor((row % gt) / d.T), lseAt: d.c0 * gt + row, visible };
}

/** P [nb * G * T, L] of scores (masked softmax of scale * s) and each row's lse (NEG: no key). */
export function maskedSoftmaxRef(
  d: RowRefDims,
  scores: ArrayLike<number>,
): { p: Float32Array; lse: Float64Array; lseAt: number[] } {
  const rows = d.nb * d.G * d.T;
  const p = new Float32Array(rows * d.L), lse = new Float64Array(rows), lseAt: number[] = [];
  for (let row = 0; row < rows; row++) {
    const info = rowInfo(d, row);
    lseAt.push(info.lseAt);
    let max = -Infinity;
    for (let s = 0; s < d.L; s++) {
      if (info.visible(s)) max = Math.max(max, scores[row * d.L + s] * d.scale);
    }
    if (max === -Infinity) {
      lse[row] = -1e30;
      continue;
    }
    let sum = 0;
    for (let s = 0; s < d.L; s++) {
      if (info.visible(s)) sum += Math.exp(scores[row * d.L + s] * d.scale - max);
    }
    lse[row] = max + Math.log(sum);
    for (let s = 0; s < d.L; s++) {
      if (!info.visible(s)) continue;
      const pr = Math.exp(scores[row * d.L + s] * d.scale - lse[row]);
      p[row * d.L + s] = d.half ? roundToF16(pr) : pr;
    }
  }
  return { p, lse, lseAt };
}

/**
 * P from scores and lse (indexed like lse [B, Hq, T]; at or below -5e29: no key) and dS = scale *
 * P * (dP - delta), delta = dO . O of the row's query (out, dout [B, T, Hkv * G, D]). With
 * `half`: delta of O and dO rounded to halves, P rounded, dS = round(P (dP - delta)) * scale.
 */
export function softmaxGradRef(
  d: RowRefDims & { D: number },
  x: {
    scores: ArrayLike<number>;
    dp: ArrayLike<number>;
    lse: ArrayLike<number>;
    out: ArrayLike<number>;
    dout: ArrayLike<number>;
  },
): { p: Float32Array; ds: Float32Array } {
  const rows = d.nb * d.G * d.T, Hq = d.Hkv * d.G;
  const p = new Float32Array(rows * d.L), ds = new Float32Array(rows * d.L);
  for (let row = 0; row < rows; row++) {
    const info = rowInfo(d, row);
    const b = Math.floor(info.bh / d.Hkv), h = (info.bh % d.Hkv) * d.G + info.g;
    const ob = ((b * d.T + info.t) * Hq + h) * d.D;
    const h16 = d.half ? roundToF16 : (v: number) => v;
    let delta = 0;
    for (let c = 0; c < d.D; c++) delta += h16(x.out[ob + c]) * h16(x.dout[ob + c]);
    const l = x.lse[info.lseAt];
    for (let s = 0; s < d.L; s++) {
      const i = row * d.L + s;
      const pr = l > -5e29 && info.visible(s) ? Math.exp(x.scores[i] * d.scale - l) : 0;
      p[i] = h16(pr);
      ds[i] = h16(pr * (x.dp[i] - delta)) * d.scale;
    }
  }
  return { p, ds };
}
