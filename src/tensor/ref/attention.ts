/**
 * CPU reference for grouped-query attention with causal, padding and kv-length masking, forward
 * and backward, over plain typed arrays (f64 accumulation). The GPU kernels in
 * `shaders/attention_*.wgsl` are tested against it.
 */

export interface AttentionDims {
  B: number;
  T: number;
  /** Rows of k/v along dim 1 (the buffer; only the first `L` are valid). */
  S: number;
  Hq: number;
  Hkv: number;
  D: number;
}

export interface AttentionRefOptions {
  /** [B, maskStride] with 1 = real token, 0 = padding (only the first L columns are read). */
  keyMask?: ArrayLike<number>;
  maskStride?: number;
  causal?: boolean;
  queryOffset?: number;
  scale?: number;
  kvLength?: number;
}

/** The options resolved: valid keys L, the query offset, the scale and the visibility rule. */
export interface Resolved {
  L: number;
  off: number;
  scale: number;
  visible: (b: number, t: number, s: number) => boolean;
}

export function resolve(dims: AttentionDims, o: AttentionRefOptions): Resolved {
  const L = o.kvLength ?? dims.S;
  const off = o.queryOffset ?? L - dims.T;
  const causal = o.causal ?? true;
  const stride = o.maskStride ?? dims.S;
  const mask = o.keyMask;
  return {
    L,
    off,
    scale: o.scale ?? 1 / Math.sqrt(dims.D),
    visible: (b, t, s) =>
      s < L && (!mask || mask[b * stride + s] !== 0) && (!causal || s <= off + t),
  };
}

/** Softmax probabilities of one query row over keys [0, L); all zero when no key is visible. */
export function rowProbs(
  dims: AttentionDims,
  r: Resolved,
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  b: number,
  t: number,
  h: number,
): { p: Float64Array; lse: number } {
  const { T, S, Hq, Hkv, D } = dims;
  const hk = Math.floor(h / (Hq / Hkv));
  const qo = ((b * T + t) * Hq + h) * D;
  const p = new Float64Array(r.L);
  let max = -Infinity;
  for (let s = 0; s < r.L; s++) {
    if (!r.visible(b, t, s)) continue;
    const ko = ((b * S + s) * Hkv + hk) * D;
    let dot = 0;
    for (let d = 0; d < D; d++) dot += q[qo + d] * k[ko + d];
    p[s] = dot * r.scale;
    max = Math.max(max, p[s]);
  }
  if (max === -Infinity) return { p: p.fill(0), lse: -Infinity };
  let sum = 0;
  for (let s = 0; s < r.L; s++) {
    p[s] = r.visible(b, t, s) ? Math.exp(p[s] - max) : 0;
    sum += p[s];
  }
  for (let s = 0; s < r.L; s++) p[s] /= sum;
  return { p, lse: max + Math.log(sum) };
}

/** out [B, T, Hq, D] and the per-row logsumexp lse [B, Hq, T] (-Infinity for rows that see nothing). */
export function attentionRef(
  dims: AttentionDims,
  q: ArrayLike<number>, // [B, T, Hq, D]
  k: ArrayLike<number>, // [B, S, Hkv, D]
  v: ArrayLike<number>, // [B, S, Hkv, D]
  options: AttentionRefOptions = {},
): { out: Float32Array; lse: Float32Array } {
  const { B, T, S, Hq, Hkv, D } = dims;
  const r = resolve(dims, options);
  const out = new Float32Array(B * T * Hq * D);
  const lse = new Float32Array(B * Hq * T);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < Hq; h++) {
        const hk = Math.floor(h / (Hq / Hkv));
        const { p, lse: l } = rowProbs(dims, r, q, k, b, t, h);
        lse[(b * Hq + h) * T + t] = l;
        const oo = ((b * T + t) * Hq + h) * D;
        for (let d = 0; d < D; d++) {
          let acc = 0;
          for (let s = 0; s < r.L; s++) acc += p[s] * v[((b * S + s) * Hkv + hk) * D + d];
          out[oo + d] = acc;
        }
      }
    }
  }
  return { out, lse };
}

/**
 * Gradients of sum(out * dout) with respect to q, k and v. dk and dv have the full buffer shape
 * [B, S, Hkv, D], zero past kvLength; each kv head sums over the query heads that share it.
 */
export function attentionBackwardRef(
  dims: AttentionDims,
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  v: ArrayLike<number>,
  dout: ArrayLike<number>, // [B, T, Hq, D]
  options: AttentionRefOptions = {},
): { dq: Float32Array; dk: Float32Array; dv: Float32Array } {
  const { B, T, S, Hq, Hkv, D } = dims;
  const r = resolve(dims, options);
  const dq = new Float64Array(B * T * Hq * D);
  const dk = new Float64Array(B * S * Hkv * D);
  const dv = new Float64Array(B * S * Hkv * D);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < Hq; h++) {
        const hk = Math.floor(h / (Hq / Hkv));
        const qo = ((b * T + t) * Hq + h) * D;
        const { p } = rowProbs(dims, r, q, k, b, t, h);
        // dP[s] = dout . v[s];  dS[s] = P[s] * (dP[s] - sum_s' P[s'] dP[s'])
        const dp = new Float64Array(r.L);
        let delta = 0;
        for (let s = 0; s < r.L; s++) {
          if (p[s] === 0) continue;
          const vo = ((b * S + s) * Hkv + hk) * D;
          for (let d = 0; d < D; d++) dp[s] += dout[qo + d] * v[vo + d];
          delta += p[s] * dp[s];
        }
        for (let s = 0; s < r.L; s++) {
          if (p[s] === 0) continue;
          const ko = ((b * S + s) * Hkv + hk) * D;
          const ds = p[s] * (dp[s] - delta) * r.scale;
          for (let d = 0; d < D; d++) {
            dv[ko + d] += p[s] * dout[qo + d];
            dq[qo + d] += ds * k[ko + d];
            dk[ko + d] += ds * q[qo + d];
          }
        }
      }
    }
  }
  return { dq: Float32Array.from(dq), dk: Float32Array.from(dk), dv: Float32Array.from(dv) };
}
