/**
 * Plain-TS inverted dropout with shaders/dropout.wgsl's mask: element i of a (seed) draw is kept
 * when pcg(i ^ pcg(seed)) >= round(p * 2^32), and kept elements are scaled by 1 / (1 - p).
 */

/** PCG's output permutation of a 32-bit value (u32 arithmetic). */
export function pcgHash(v: number): number {
  const s = (Math.imul(v >>> 0, 747796405) + 2891336453) >>> 0;
  const w = Math.imul(((s >>> ((s >>> 28) + 4)) ^ s) >>> 0, 277803737) >>> 0;
  return ((w >>> 22) ^ w) >>> 0;
}

/** The u32 threshold below which an element is dropped, for a drop probability p in [0, 1). */
export function dropThreshold(p: number): number {
  return Math.min(0xffffffff, Math.round(p * 2 ** 32));
}

/** Whether element i survives draw `seed` at drop probability p. */
export function kept(i: number, seed: number, p: number): boolean {
  return pcgHash((i ^ pcgHash(seed)) >>> 0) >= dropThreshold(p);
}

/** y = x * mask / (1 - p); also the backward on the gradient, with the same seed. */
export function dropoutRef(x: ArrayLike<number>, p: number, seed: number): Float32Array {
  const scale = Math.fround(1 / (1 - p));
  return Float32Array.from(x, (v, i) => (kept(i, seed, p) ? Math.fround(v * scale) : 0));
}
