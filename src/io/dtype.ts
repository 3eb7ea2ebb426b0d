/**
 * Element types of safetensors files and conversions between f32 and the 16-bit float formats.
 *
 * All conversions work on raw bit patterns through integer views, so NaN payloads and signed zeros
 * survive; rounding is to nearest, ties to even, like PyTorch's `.to(torch.float16/bfloat16)`.
 */

/** Every element type the safetensors format names that we can size. */
export type Dtype =
  | "F64"
  | "F32"
  | "F16"
  | "BF16"
  | "I64"
  | "I32"
  | "I16"
  | "I8"
  | "U64"
  | "U32"
  | "U16"
  | "U8"
  | "BOOL"
  | "F8_E4M3"
  | "F8_E5M2";

/** Bytes per element of each dtype. */
export const DTYPE_BYTES: Readonly<Record<Dtype, number>> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U64: 8,
  U32: 4,
  U16: 2,
  U8: 1,
  BOOL: 1,
  F8_E4M3: 1,
  F8_E5M2: 1,
};

/** The names `torch_dtype` uses in config.json for the float formats we write. */
export type TorchFloatDtype = "float32" | "float16" | "bfloat16";

const TORCH_TO_DTYPE: Record<TorchFloatDtype, Dtype> = {
  float32: "F32",
  float16: "F16",
  bfloat16: "BF16",
};

export function isDtype(value: unknown): value is Dtype {
  return typeof value === "string" && Object.hasOwn(DTYPE_BYTES, value);
}

/** Maps a config.json `torch_dtype` string to the safetensors dtype. */
export function dtypeFromTorch(name: TorchFloatDtype): Dtype {
  const dtype = TORCH_TO_DTYPE[name];
  if (!dtype) throw new Error(`unsupported float dtype "${name}" (float32, float16 or bfloat16)`);
  return dtype;
}

/** True for the dtypes we can convert to and from f32. */
export function isFloatDtype(dtype: Dtype): dtype is "F32" | "F16" | "BF16" {
  return dtype === "F32" || dtype === "F16" || dtype === "BF16";
}

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

/** Rounds the bits of one f32 to bf16 bits. */
function f32BitsToBf16Bits(bits: number): number {
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) {
    return ((bits >>> 16) | 0x40) & 0xffff;
  }
  // Adding 0x7fff plus the lowest kept bit rounds to nearest with ties to even.
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/** One number to f16 bits. */
export function f32ToF16Bits(x: number): number {
  scratchF32[0] = x;
  return f32BitsToF16Bits(scratchU32[0]);
}

/** f16 bits to a number. */
export function f16BitsToF32(half: number): number {
  scratchU32[0] = f16BitsToF32Bits(half & 0xffff);
  return scratchF32[0];
}

/** One number to bf16 bits. */
export function f32ToBf16Bits(x: number): number {
  scratchF32[0] = x;
  return f32BitsToBf16Bits(scratchU32[0]);
}

/** bf16 bits to a number. */
export function bf16BitsToF32(bits: number): number {
  scratchU32[0] = (bits & 0xffff) << 16;
  return scratchF32[0];
}

/** Views `bytes` as elements of `Ctor` when aligned, otherwise copies into a fresh array. */
function viewOrCopy<T extends Uint16Array | Uint32Array | Float32Array>(
  bytes: Uint8Array,
  ctor: { new (b: ArrayBufferLike, o: number, n: number): T; new (n: number): T },
  size: number,
): T {
  if (bytes.byteLength % size !== 0) {
    throw new Error(`byte length ${bytes.byteLength} is not a multiple of ${size}`);
  }
  const n = bytes.byteLength / size;
  if (bytes.byteOffset % size === 0) return new ctor(bytes.buffer, bytes.byteOffset, n);
  const out = new ctor(n);
  new Uint8Array(out.buffer).set(bytes);
  return out;
}

/**
 * Decodes little-endian F32, F16 or BF16 bytes to f32. For F32 input the result may share memory
 * with `bytes` (when aligned); copy it before writing into it if the source must stay intact.
 */
export function toFloat32(bytes: Uint8Array, dtype: Dtype): Float32Array {
  if (dtype === "F32") return viewOrCopy(bytes, Float32Array, 4);
  if (dtype !== "F16" && dtype !== "BF16") {
    throw new Error(`cannot convert ${dtype} to float32 (F32, F16 or BF16 only)`);
  }
  const src = viewOrCopy(bytes, Uint16Array, 2);
  if (dtype === "F16") {
    const out = new Float32Array(src.length);
    f16ToF32Into(src, out);
    return out;
  }
  const out = new Uint32Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = src[i] << 16;
  return new Float32Array(out.buffer);
}

/** Encodes f32 values as little-endian bytes of `dtype` (F32 copies; F16/BF16 round to even). */
export function fromFloat32(values: Float32Array, dtype: Dtype): Uint8Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  if (dtype === "F32") return new Uint8Array(new Uint32Array(bits).buffer);
  if (dtype !== "F16" && dtype !== "BF16") {
    throw new Error(`cannot convert float32 to ${dtype} (F32, F16 or BF16 only)`);
  }
  const out = new Uint16Array(values.length);
  if (dtype === "F16") f32ToF16Into(values, out);
  else {
    for (let i = 0; i < bits.length; i++) out[i] = f32BitsToBf16Bits(bits[i]);
  }
  return new Uint8Array(out.buffer);
}

/** Re-encodes float bytes from one float dtype to another; same dtype returns the input. */
export function convertFloatBytes(bytes: Uint8Array, from: Dtype, to: Dtype): Uint8Array {
  if (from === to) return bytes;
  return fromFloat32(toFloat32(bytes, from), to);
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
