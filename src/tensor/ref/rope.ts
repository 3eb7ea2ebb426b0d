/**
 * CPU reference of rotary position embedding as Hugging Face applies it to Qwen2/Llama q and k:
 * `q * cos + rotate_half(q) * sin`, where rotate_half pairs dimension i with i + D/2.
 */

/** HF's inv_freq in f32: 1 / theta^(2i / D) for i < D/2, rounded as torch rounds it. */
export function ropeInvFreqRef(theta: number, D: number): Float32Array {
  const out = new Float32Array(D / 2);
  for (let i = 0; i < D / 2; i++) {
    out[i] = 1 / Math.fround(Math.pow(Math.fround(theta), Math.fround((2 * i) / D)));
  }
  return out;
}

/**
 * Rotates x [B, T, H, D] by the angles of positions [B, T]. `inverse` rotates by the negative
 * angle, which is also the gradient of the forward rotation.
 */
export function ropeRef(
  x: Float32Array,
  positions: Int32Array,
  shape: readonly [number, number, number, number],
  options: { theta: number; inverse?: boolean; invFreq?: Float32Array; scale?: number },
): Float32Array {
  const [B, T, H, D] = shape;
  const half = D / 2;
  const invFreq = options.invFreq ?? ropeInvFreqRef(options.theta, D); // [D/2]
  const sign = options.inverse ? -1 : 1;
  const scale = Math.fround(options.scale ?? 1);
  const out = new Float32Array(x.length); // [B, T, H, D]
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const pos = positions[b * T + t];
      for (let i = 0; i < half; i++) {
        // HF forms the angle as an f32 product and takes cos/sin of it in f32.
        const a = Math.fround(Math.fround(pos) * invFreq[i]);
        // HF multiplies cos and sin by its attention scaling before rotating.
        const c = Math.fround(Math.fround(Math.cos(a)) * scale);
        const s = sign * Math.fround(Math.fround(Math.sin(a)) * scale);
        for (let h = 0; h < H; h++) {
          const base = ((b * T + t) * H + h) * D;
          const x1 = x[base + i], x2 = x[base + i + half];
          out[base + i] = x1 * c - x2 * s;
          out[base + i + half] = x2 * c + x1 * s;
        }
      }
    }
  }
  return out;
}

/**
 * HF's dynamic NTK table [D/2] for a forward whose largest position is max(positions): each step
 * in f32 as transformers computes it (L = max position + 1, at least M = max_position_embeddings;
 * base = theta * (factor * L / M - (factor - 1))^(D / (D - 2)); inv_freq = 1 / base^(2i/D)).
 */
export function ropeDynamicInvFreqRef(
  positions: ArrayLike<number>,
  o: { theta: number; headDim: number; factor: number; maxPositionEmbeddings: number },
): Float32Array {
  const f = Math.fround, D = o.headDim, M = o.maxPositionEmbeddings;
  let top = 0;
  for (let i = 0; i < positions.length; i++) top = Math.max(top, positions[i]);
  const len = Math.max(top + 1, M);
  const ratio = f(f(f(f(o.factor) * len) / M) - f(o.factor - 1));
  const base = f(f(o.theta) * f(Math.pow(ratio, f(D / (D - 2)))));
  return ropeInvFreqRef(base, D);
}

/** q [B, T, Hq, D] and k [B, T, Hkv, D] rotated at the same positions, as two {@link ropeRef}s. */
export function ropeQKRef(
  q: Float32Array,
  k: Float32Array,
  positions: Int32Array,
  shapes: {
    q: readonly [number, number, number, number];
    k: readonly [number, number, number, number];
  },
  options: { theta: number; inverse?: boolean; invFreq?: Float32Array; scale?: number },
): [Float32Array, Float32Array] {
  return [ropeRef(q, positions, shapes.q, options), ropeRef(k, positions, shapes.k, options)];
}
