/**
 * Array conventions and masked reductions shared by every algorithm here.
 *
 * Conventions (all of src/algos):
 * - A `[B, R]` matrix is a flat row-major typed array of length `B * R`
 *   (B samples x R response tokens); functions receive `R` and derive `B`.
 * - Values are `Vec` (Float32Array for GPU-facing buffers; Float64Array is
 *   accepted everywhere so tests can take precise finite differences).
 *   Arithmetic is done in f64 JS numbers; outputs are allocated with the type
 *   of the main input (`like`).
 * - Masks are `Mask`: any numeric typed array holding 0/1, canonically a
 *   Float32Array (what the GPU binds). An element is valid iff it is non-zero.
 *   Reductions skip invalid elements instead of multiplying by 0, so NaN or
 *   Inf left in padding never leaks into a result.
 * - Empty reductions never produce NaN: a masked mean over nothing is 0
 *   (verl divides by `count + 1e-8`, which also yields 0 there).
 *
 * @module
 */

/** Floating-point values, f32 (GPU buffers) or f64 (precise references). */
export type Vec = Float32Array | Float64Array;

/** 0/1 validity mask; element `!= 0` means valid. Float32Array is canonical. */
export type Mask = Float32Array | Float64Array | Uint8Array | Int32Array;

/** Allocates a zeroed array of the same float type as `x`. */
export function like(x: Vec, n: number = x.length): Vec {
  return x instanceof Float64Array ? new Float64Array(n) : new Float32Array(n);
}

/** Number of rows B of a flat `[B, R]` array; throws unless R divides its length. */
export function rowsOf(length: number, R: number): number {
  if (!Number.isInteger(R) || R <= 0) throw new Error(`response length R must be > 0, got ${R}`);
  if (length % R !== 0) throw new Error(`array of length ${length} is not [B, ${R}]`);
  return length / R;
}

/** Throws unless every array has the length of the first. */
export function checkSameLength(named: Record<string, { length: number }>): void {
  const entries = Object.entries(named);
  const [name0, a0] = entries[0];
  for (const [name, a] of entries) {
    if (a.length !== a0.length) {
      throw new Error(`${name} has length ${a.length}, expected ${a0.length} (like ${name0})`);
    }
  }
}

/** Σ_i x_i over valid i. */
export function maskedSum(x: Vec, mask: Mask): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) if (mask[i] !== 0) s += x[i];
  return s;
}

/** Number of valid elements. */
export function maskCount(mask: Mask): number {
  let n = 0;
  for (let i = 0; i < mask.length; i++) if (mask[i] !== 0) n++;
  return n;
}

/** Σ x·m / Σ m over all elements; 0 when nothing is valid. */
export function maskedMean(x: Vec, mask: Mask): number {
  const n = maskCount(mask);
  return n === 0 ? 0 : maskedSum(x, mask) / n;
}

/** Max over valid elements; -Infinity when nothing is valid. */
export function maskedMax(x: Vec, mask: Mask): number {
  let m = -Infinity;
  for (let i = 0; i < x.length; i++) if (mask[i] !== 0 && x[i] > m) m = x[i];
  return m;
}

/** Min over valid elements; +Infinity when nothing is valid. */
export function maskedMin(x: Vec, mask: Mask): number {
  let m = Infinity;
  for (let i = 0; i < x.length; i++) if (mask[i] !== 0 && x[i] < m) m = x[i];
  return m;
}

/**
 * Per-row masked mean of a `[B, R]` array -> `[B]` (Float64Array).
 * mean_b = Σ_t x[b,t]·m[b,t] / Σ_t m[b,t]; an all-padding row gives 0.
 */
export function rowMaskedMean(x: Vec, mask: Mask, R: number): Float64Array {
  const B = rowsOf(x.length, R);
  const out = new Float64Array(B);
  for (let b = 0; b < B; b++) {
    let s = 0, n = 0;
    for (let t = b * R; t < (b + 1) * R; t++) if (mask[t] !== 0) (s += x[t], n++);
    out[b] = n === 0 ? 0 : s / n;
  }
  return out;
}

/**
 * Masked variance, like verl's `masked_var`: mean of (x - mean)^2 over valid
 * elements, times n/(n-1) when `unbiased` (torch.var's default). The unbiased
 * form needs at least 2 valid elements and throws otherwise, as verl does.
 */
export function maskedVar(x: Vec, mask: Mask, unbiased = true): number {
  const n = maskCount(mask);
  const mean = maskedMean(x, mask);
  let ss = 0;
  for (let i = 0; i < x.length; i++) if (mask[i] !== 0) ss += (x[i] - mean) ** 2;
  if (!unbiased) return n === 0 ? 0 : ss / n;
  if (n < 2) throw new Error(`masked variance needs at least 2 valid elements, got ${n}`);
  return ss / (n - 1);
}

/**
 * verl's `masked_whiten`: (x - mean) / sqrt(var + 1e-8) with masked mean and
 * unbiased masked variance. Applied to every element (invalid ones included,
 * as verl does); callers that want zeros in padding multiply by the mask.
 * `shiftMean: false` adds the mean back.
 */
export function maskedWhiten(x: Vec, mask: Mask, shiftMean = true): Vec {
  const mean = maskedMean(x, mask);
  const inv = 1 / Math.sqrt(maskedVar(x, mask) + 1e-8);
  const out = like(x);
  for (let i = 0; i < x.length; i++) out[i] = (x[i] - mean) * inv + (shiftMean ? 0 : mean);
  return out;
}

/** Unbiased standard deviation of a plain list (torch.std's default); NaN for n < 2. */
export function stdUnbiased(xs: ArrayLike<number>): number {
  const n = xs.length;
  let mean = 0;
  for (let i = 0; i < n; i++) mean += xs[i];
  mean /= n;
  let ss = 0;
  for (let i = 0; i < n; i++) ss += (xs[i] - mean) ** 2;
  return Math.sqrt(ss / (n - 1));
}
