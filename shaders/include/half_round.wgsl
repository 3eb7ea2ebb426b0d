// f32 -> the nearest IEEE half (ties to even) in integer arithmetic, so that every adapter rounds
// alike, with shader-f16 or without (pack2x16float leaves subnormals and out-of-range values to
// the implementation). round_half gives the half as an f32: subnormal halves are kept, and a
// value past the half range (|x| >= 65520) becomes the sign's infinity, as the cast op's f16
// conversion; half_bits gives its 16 bits (the layout of an f16 tensor's elements). The CPU
// reference is roundToF16 (src/tensor/half.ts).

const HALF_MIN_NORMAL: f32 = 6.103515625e-5; // 2^-14
const HALF_SUB_SCALE: f32 = 16777216.0; // 2^24: subnormal halves are multiples of 2^-24
const HALF_SUB_STEP: f32 = 5.9604644775390625e-8; // 2^-24

fn round_half(x: f32) -> f32 {
  if (abs(x) < HALF_MIN_NORMAL) { return round(x * HALF_SUB_SCALE) * HALF_SUB_STEP; }
  let b = bitcast<u32>(x);
  // Drop the 13 low mantissa bits, to the nearest with ties to even; a carry bumps the exponent.
  let r = (b + 0xfffu + ((b >> 13u) & 1u)) & 0xffffe000u;
  if ((r & 0x7fffffffu) >= 0x47800000u) { // 2^16 and beyond: past the largest half, 65504
    return bitcast<f32>((b & 0x80000000u) | 0x7f800000u);
  }
  return bitcast<f32>(r);
}

fn half_bits(x: f32) -> u32 {
  let r = round_half(x);
  let b = bitcast<u32>(r);
  let sign = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  if (a >= 0x7f800000u) { return sign | 0x7c00u; }
  if (a < 0x38800000u) { return sign | u32(abs(r) * HALF_SUB_SCALE); } // below 2^-14: subnormal
  return sign | ((((a >> 23u) - 112u) << 10u) | ((a >> 13u) & 0x3ffu));
}
