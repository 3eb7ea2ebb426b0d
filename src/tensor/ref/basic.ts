/**
 * CPU references of the autograd core's own kernels (shaders/basic.wgsl, shaders/axpy.wgsl, as
 * dispatched by ops/basic.ts), in f64 over plain arrays.
 */

/** n copies of value (fill, zeros). */
export function fillRef(n: number, value: number): Float64Array {
  return new Float64Array(n).fill(value);
}

/** y * a, elementwise (scaleInPlace). */
export function scaleRef(y: ArrayLike<number>, a: number): Float64Array {
  return Float64Array.from(y, (v) => v * a);
}

/** y + a * x, elementwise (accumulate). */
export function axpyRef(y: ArrayLike<number>, x: ArrayLike<number>, a: number): Float64Array {
  if (x.length !== y.length) throw new Error(`axpyRef: ${x.length} vs ${y.length} elements`);
  return Float64Array.from(y, (v, i) => v + a * x[i]);
}
