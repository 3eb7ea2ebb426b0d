/**
 * Element types of safetensors files and conversions between f32 and the 16-bit float formats.
 *
 * All conversions work on raw bit patterns through integer views, so NaN payloads and signed zeros
 * survive; rounding is to nearest, ties to even, like PyTorch's `.to(torch.float16/bfloat16)`.
 * The f16 conversions themselves live in the tensor layer (tensor/half.ts).
 */
import { f16ToF32Into, f32ToF16Into } from "../tensor/mod.ts";

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

/** Rounds the bits of one f32 to bf16 bits. */
function f32BitsToBf16Bits(bits: number): number {
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) {
    return ((bits >>> 16) | 0x40) & 0xffff;
  }
  // Adding 0x7fff plus the lowest kept bit rounds to nearest with ties to even.
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
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
