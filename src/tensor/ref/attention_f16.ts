/**
 * CPU reference of `attention` with precision "f16" (torch autocast's fp16 attention): the sums of
 * ref/attention.ts (in f64) over values rounded to halves where the GPU rounds them: q, k, v and
 * dout on the way in, P before P V and P^T dO, dS = P (dP - delta) before dQ and dK (the scale
 * multiplies after), O and dO inside delta = dO . O, and out, dq, dk, dv on the way out. The
 * scores, the softmax, lse, dP and delta themselves are not rounded. With `round` the identity
 * it computes the f32 reference's numbers, which checks everything but the rounding.
 */
import { roundToF16 } from "../half.ts";
import { type AttentionDims, type AttentionRefOptions, resolve, rowProbs } from "./attention.ts";

export interface RoundedRefOptions extends AttentionRefOptions {
  /** The rounding applied at each point (default roundToF16: the nearest half, via f32). */
  round?: (x: number) => number;
}

function rounded(x: ArrayLike<number>, round: (x: number) => number): Float64Array {
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = round(x[i]);
  return out;
}

/** out [B, T, Hq, D] and lse [B, Hq, T] (-Infinity for rows that see no key). */
export function attentionF16Ref(
  dims: AttentionDims,
  q: ArrayLike<number>, // [B, T, Hq, D]
  k: ArrayLike<number>, // [B, S, Hkv, D]
  v: ArrayLike<number>, // [B, S, Hkv, D]
  options: RoundedRefOptions = {},
): { out: Float32Array; lse: Float32Array } {
  const round = options.round ?? roundToF16;
  const { B, T, S, Hq, Hkv, D } = dims;
  const r = resolve(dims, options);
  const q16 = rounded(q, round), k16 = rounded(k, round), v16 = rounded(v, round);
  const out = new Float32Array(B * T * Hq * D);
  const lse = new Float32Array(B * Hq * T);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < Hq; h++) {
        const hk = Math.floor(h / (Hq / Hkv));
        const { p, lse: l } = rowProbs(dims, r, q16, k16, b, t, h);
        lse[(b * Hq + h) * T + t] = l;
        const p16 = rounded(p, round);
        const oo = ((b * T + t) * Hq + h) * D;
        for (let d = 0; d < D; d++) {
          let acc = 0;
          for (let s = 0; s < r.L; s++) acc += p16[s] * v16[((b * S + s) * Hkv + hk) * D + d];
          out[oo + d] = round(acc);
        }
      }
    }
  }
  return { out, lse };
}

/**
 * Gradients of sum(out * dout) with respect to q, k and v, shaped as attentionBackwardRef's (dk
 * and dv [B, S, Hkv, D], zero past kvLength); delta rounds this reference's own f32 output.
 */
export function attentionF16BackwardRef(
  dims: AttentionDims,
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  v: ArrayLike<number>,
  dout: ArrayLike<number>, // [B, T, Hq, D]
  options: RoundedRefOptions = {},
): { dq: Float32Array; dk: Float32Array; dv: Float32Array } {
  const round = options.round ?? roundToF16;
  const { B, T, S, Hq, Hkv, D } = dims;
  const r = resolve(dims, options);
  const q16 = rounded(q, round), k16 = rounded(k, round), v16 = rounded(v, round);
  const do16 = rounded(dout, round);
  const o16 = rounded(attentionF16Ref(dims, q, k, v, options).out, round);
  const dq = new Float64Array(B * T * Hq * D);
  const dk = new Float64Array(B * S * Hkv * D);
  const dv = new Float64Array(B * S * Hkv * D);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < Hq; h++) {
        const hk = Math.floor(h / (Hq / Hkv));
        const qo = ((b * T + t) * Hq + h) * D;
        const { p } = rowProbs(dims, r, q16, k16, b, t, h);
        let delta = 0;
        for (let d = 0; d < D; d++) delta += o16[qo + d] * do16[qo + d];
        for (let s = 0; s < r.L; s++) {
          if (p[s] === 0) continue;
          const ko = ((b * S + s) * Hkv + hk) * D;
          let dp = 0;
          for (let d = 0; d < D; d++) dp += do16[qo + d] * v16[ko + d];
          const p16 = round(p[s]), ds = round(p[s] * (dp - delta)) * r.scale;
          for (let d = 0; d < D; d++) {
            dv[ko + d] += p16 * do16[qo + d];
            dq[qo + d] += ds * k16[ko + d];
            dk[ko + d] += ds * q16[qo + d];
          }
        }
      }
    }
  }
  const out = (x: Float64Array) => Float32Array.from(x, round);
  return { dq: out(dq), dk: out(dk), dv: out(dv) };
}
