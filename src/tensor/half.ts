/**
 * IEEE half precision on the CPU: f32 <-> f16 bits, one value or whole arrays, rounding to nearest
 * even, infinities and NaN kept (a NaN stays a NaN, quiet, with the top bits of its payload).
 * Tensor uploads of f16 data, the safetensors dtypes (io) and the weight uploads use these.
 */

// Scratch views for the scalar helpers; one shared buffer avoids allocating per call.
const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

/** Rounds the bits of one f32 to f16 bits. */
function f32BitsToF16Bits(bits: number): number {
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  const mant = bits & 0x7fffff;
  if (exp === 0xff) {
    // Keep the top payload bits, and force the quiet bit so a NaN cannot collapse to infinity.
    return mant === 0 ? sign | 0x7c00 : sign | 0x7e00 | (mant >>> 13);
  }
  const e = exp - 112; // rebias from 127 to 15
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Below 2^-25 even rounding cannot reach the smallest subnormal.
    if (e < -10) return sign;
    const sig = mant | 0x800000;
    const shift = 14 - e;
    let half = sig >>> shift;
    const rest = sig & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rest > mid || (rest === mid && (half & 1) === 1)) half++;
    // A carry out of the subnormal range lands exactly on the smallest normal's bit pattern.
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1) === 1)) half++;
  // A mantissa carry bumps the exponent; past the largest finite value it yields 0x7c00 (inf).
  return sign | half;
}

/** Widens f16 bits to f32 bits (exact). */
function f16BitsToF32Bits(half: number): number {
  const sign = (half & 0x8000) << 16;
  const exp = (half >>> 10) & 0x1f;
  const mant = half & 0x3ff;
  if (exp === 0x1f) return (sign | 0x7f800000 | (mant << 13)) >>> 0;
  if (exp !== 0) return (sign | ((exp + 112) << 23) | (mant << 13)) >>> 0;
  if (mant === 0) return sign >>> 0;
  // Subnormal f16 values are normal in f32: shift the leading one into the implicit position.
  let m = mant;
  let e = 113;
  while ((m & 0x400) === 0) {
    m <<= 1;
    e--;
  }
  return (sign | (e << 23) | ((m & 0x3ff) << 13)) >>> 0;
}

/** One number to f16 bits (rounded to f32 first). */
export function f32ToF16Bits(x: number): number {
  scratchF32[0] = x;
  return f32BitsToF16Bits(scratchU32[0]);
}

/** f16 bits to a number. */
export function f16BitsToF32(half: number): number {
  scratchU32[0] = f16BitsToF32Bits(half & 0xffff);
  return scratchF32[0];
}

/** v rounded to the nearest f16 (ties to even; past the f16 range +-inf), as a number. */
export function roundToF16(v: number): number {
  return f16BitsToF32(f32ToF16Bits(v));
}

let f16Table: Uint32Array | null = null;

/** f16 bits -> f32 bits of `src` into `dst` (same length): a table of all 65,536 halves. */
export function f16ToF32Into(src: Uint16Array, dst: Float32Array): void {
  if (src.length !== dst.length) throw new Error(`f16ToF32Into: ${src.length} != ${dst.length}`);
  if (!f16Table) {
    f16Table = new Uint32Array(65536);
    for (let h = 0; h < 65536; h++) f16Table[h] = f16BitsToF32Bits(h);
  }
  const table = f16Table, out = new Uint32Array(dst.buffer, dst.byteOffset, dst.length);
  for (let i = 0; i < src.length; i++) out[i] = table[src[i]];
}

type Half = { new (b: ArrayBufferLike, o: number, n: number): { set(a: Float32Array): void } };
const nativeHalf = (globalThis as { Float16Array?: Half }).Float16Array;

/**
 * f32 -> f16 bits (round to nearest even) of `src` into `dst` (same length): the engine's
 * Float16Array where it has one (Deno, recent browsers; every NaN becomes the quiet NaN 0x7e00),
 * else a loop over the bits.
 */
export function f32ToF16Into(src: Float32Array, dst: Uint16Array): void {
  if (src.length !== dst.length) throw new Error(`f32ToF16Into: ${src.length} != ${dst.length}`);
  if (nativeHalf) {
    new nativeHalf(dst.buffer, dst.byteOffset, dst.length).set(src);
    return;
  }
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < bits.length; i++) dst[i] = f32BitsToF16Bits(bits[i]);
}
