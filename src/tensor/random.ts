/**
 * The one seeded PRNG of the project (mulberry32) and what is built on it: tuple seeds, shuffles,
 * permutations, integers and normal samples. Deterministic across runs, machines and JS engines,
 * so a seed reproduces data order, initial weights, test data and sampling seeds everywhere.
 */

/** Floats in [0, 1) from a 32-bit seed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A mulberry32 stream seeded by a tuple, so every (seed, step, epoch) stream is its own. */
export function seededRandom(...parts: number[]): () => number {
  let s = 0x9e3779b9;
  for (const p of parts) s = Math.imul(s ^ (p >>> 0), 0x85ebca6b) ^ (s >>> 13);
  return mulberry32(s);
}

/** A 31-bit seed derived from a tuple (generation seeds per step). */
export function deriveSeed(...parts: number[]): number {
  return Math.floor(seededRandom(...parts)() * 2 ** 31);
}

/** Mixes two integers into one seed, so each (seed, epoch) pair gets its own stream. */
export function mixSeed(seed: number, salt: number): number {
  let h = (seed ^ Math.imul(salt + 0x9e3779b9, 0x85ebca6b)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A seeded Fisher-Yates shuffle (a new array). */
export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** A seeded permutation of 0..n-1. */
export function permutation(n: number, seed: number): Uint32Array {
  const p = new Uint32Array(n);
  for (let i = 0; i < n; i++) p[i] = i;
  const rand = mulberry32(seed);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [p[i], p[j]] = [p[j], p[i]];
  }
  return p;
}

/** A seeded integer in [lo, hi]. */
export function randInt(rand: () => number, lo: number, hi: number): number {
  return lo + Math.floor(rand() * (hi - lo + 1));
}

/** Uniform values in [lo, hi). */
export function uniformArray(n: number, seed: number, lo = -1, hi = 1): Float32Array {
  const r = mulberry32(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = lo + (hi - lo) * r();
  return out;
}

/** Standard normal samples (Box-Muller over mulberry32). */
export function normalSampler(seed: number): () => number {
  const uniform = mulberry32(seed);
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const v = spare;
      spare = null;
      return v;
    }
    const r = Math.sqrt(-2 * Math.log(1 - uniform())); // 1 - u lies in (0, 1]: no log(0)
    const a = 2 * Math.PI * uniform();
    spare = r * Math.sin(a);
    return r * Math.cos(a);
  };
}
