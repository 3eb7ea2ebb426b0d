import assert from "node:assert/strict";
import { bf16BitsToF32, convertFloatBytes, f32ToBf16Bits, toFloat32 } from "./dtype.ts";

function bitsOf(x: number): number {
  return new Uint32Array(new Float32Array([x]).buffer)[0];
}

function floatOfBits(bits: number): number {
  return new Float32Array(new Uint32Array([bits]).buffer)[0];
}

Deno.test("bf16: edge values, ties, NaN and overflow", () => {
  const cases: [number, number][] = [
    [0, 0x0000],
    [-0, 0x8000],
    [1, 0x3f80],
    [Infinity, 0x7f80],
    [-Infinity, 0xff80],
    [floatOfBits(0x3f808000), 0x3f80], // tie, kept mantissa even
    [floatOfBits(0x3f818000), 0x3f82], // tie, kept mantissa odd: up
    [floatOfBits(0x3f808001), 0x3f81], // above the tie
    [floatOfBits(0x7f7f7fff), 0x7f7f], // largest bf16 stays
    [floatOfBits(0x7f7fffff), 0x7f80], // largest f32 rounds to infinity, as torch does
    [floatOfBits(0x00000001), 0x0000], // smallest f32 subnormal rounds to zero
    [floatOfBits(0x00010000), 0x0001], // a bf16 subnormal is exact
  ];
  for (const [x, bits] of cases) assert.equal(f32ToBf16Bits(x), bits, `bf16(${x})`);
  const nan = f32ToBf16Bits(floatOfBits(0x7f800001));
  assert.ok(Number.isNaN(bf16BitsToF32(nan)));
  assert.equal(bf16BitsToF32(0x3f80), 1);
  assert.equal(bitsOf(bf16BitsToF32(0x8000)), 0x80000000);
});

Deno.test("conversions: unaligned views are copied, dtypes re-encode", () => {
  const f32 = new Float32Array([1.5, -2.25, 3e-5, 65504]);
  const padded = new Uint8Array(17);
  padded.set(new Uint8Array(f32.buffer), 1);
  assert.deepEqual(Array.from(toFloat32(padded.subarray(1), "F32")), Array.from(f32));
  const f16 = convertFloatBytes(new Uint8Array(f32.buffer), "F32", "F16");
  const bf16 = convertFloatBytes(f16, "F16", "BF16");
  assert.equal(f16.byteLength, 8);
  const small = bf16BitsToF32(f32ToBf16Bits(Math.f16round(3e-5)));
  assert.deepEqual(Array.from(toFloat32(bf16, "BF16")), [1.5, -2.25, small, 65536]);
  assert.throws(() => toFloat32(new Uint8Array(4), "I32"), /I32/);
  assert.throws(() => toFloat32(new Uint8Array(3), "F16"), /multiple of 2/);
});
