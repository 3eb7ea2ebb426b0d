/**
 * Inputs the GPU loss tests share: ragged masks (with holes and all-padding rows) and padding
 * poisoned with NaN and huge values, which must never reach a loss, a statistic or a gradient.
 */
import { rng } from "../../testing/mod.ts";

/** Ragged [B, R] mask: random lengths, a hole mid-response in some rows, every 4th row padding. */
export function raggedMask(B: number, R: number, seed: number): Int32Array {
  const r = rng(seed);
  const m = new Int32Array(B * R);
  for (let b = 0; b < B; b++) {
    if (b % 4 === 2) continue;
    const len = 1 + Math.floor(r() * R);
    const holeAt = Math.floor(r() * len), holeLen = r() < 0.5 ? 1 + Math.floor(r() * 2) : 0;
    for (let t = 0; t < len; t++) m[b * R + t] = t >= holeAt && t < holeAt + holeLen ? 0 : 1;
  }
  return m;
}

/** Garbage (NaN, huge) where the mask is 0. */
export function poison(x: Float32Array, mask: Int32Array): Float32Array {
  return x.map((v, i) => mask[i] ? v : i % 2 ? NaN : 1e30);
}

/** Valid tokens of a mask. */
export function count(mask: Int32Array): number {
  return mask.reduce((a, b) => a + b, 0);
}
