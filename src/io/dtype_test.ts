import assert from "node:assert/strict";
import {
  bf16BitsToF32,
  convertFloatBytes,
  f16BitsToF32,
  f16ToF32Into,
  f32ToBf16Bits,
  f32ToF16Bits,
  f32ToF16Into,
  fromFloat32,
  toFloat32,
} from "./dtype.ts";

function bitsOf(x: number): number {
  return new Uint32Array(new Float32Array([x]).buffer)[0];
}

function floatOfBits(bits: number): number {
  return new Float32Array(new Uint32Array([bits]).buffer)[0];
}

Deno.test("f16: edge values encode to the IEEE bit patterns", () => {
  const cases: [number, number][] = [
    [0, 0x0000],
    [-0, 0x8000],
    [1, 0x3c00],
    [-2, 0xc000],
    [65504, 0x7bff], // largest finite
    [65519.99, 0x7bff], // just below the midpoint to infinity
    [65520, 0x7c00], // the midpoint rounds (to even) up to infinity
    [1e9, 0x7c00],
    [Infinity, 0x7c00],
    [-Infinity, 0xfc00],
    [2 ** -14, 0x0400], // smallest normal
    [2 ** -24, 0x0001], // smallest subnormal
    [2 ** -25, 0x0000], // tie between 0 and the smallest subnormal: even is 0
    [2 ** -25 * 1.0000001, 0x0001], // just above the tie
    [3 * 2 ** -25, 0x0002], // tie between 1 and 2 subnormal units: even is 2
    [1023 * 2 ** -24, 0x03ff], // largest subnormal
    [1 + 2 ** -11, 0x3c00], // tie at 1: rounds to even mantissa 0
    [1 + 3 * 2 ** -11, 0x3c02], // tie at odd mantissa 1: rounds up to 2
    [1e-10, 0x0000],
    [2 ** -149, 0x0000], // f32 subnormal underflows
  ];
  for (const [x, bits] of cases) {
    assert.equal(f32ToF16Bits(x), bits, `f16(${x})`);
  }
  const nan = f32ToF16Bits(NaN);
  assert.equal(nan & 0x7c00, 0x7c00);
  assert.notEqual(nan & 0x3ff, 0);
  // A NaN whose payload lives only in low bits must stay a NaN, not turn into infinity.
  const lowPayload = fromFloat32(new Float32Array(new Uint32Array([0x7f800001]).buffer), "F16");
  assert.ok(Number.isNaN(f16BitsToF32(new Uint16Array(lowPayload.buffer)[0])));
});

Deno.test("f16: decoding every bit pattern agrees with Float16Array", () => {
  const all = new Uint16Array(65536).map((_, i) => i);
  const ours = toFloat32(new Uint8Array(all.buffer), "F16");
  const reference = new Float16Array(all.buffer);
  for (let i = 0; i < 65536; i++) {
    if (Number.isNaN(reference[i])) assert.ok(Number.isNaN(ours[i]), `bits ${i}`);
    else assert.ok(Object.is(ours[i], reference[i]), `bits ${i}: ${ours[i]} vs ${reference[i]}`);
    assert.ok(Object.is(f16BitsToF32(i), ours[i]) || Number.isNaN(ours[i]));
  }
  // Every finite f16 and infinity round-trips exactly through f32.
  const back = new Uint16Array(fromFloat32(ours, "F16").buffer);
  for (let i = 0; i < 65536; i++) {
    if (!Number.isNaN(ours[i])) assert.equal(back[i], i, `round trip of bits ${i}`);
  }
});

Deno.test("f16: random f32 values round like Math.f16round", () => {
  const values = new Float32Array(20000);
  let seed = 12345;
  for (let i = 0; i < values.length; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    values[i] = floatOfBits(((seed & 0x3fffffff) + 0x30000000) ^ (i & 1 ? 0x80000000 : 0));
  }
  const halves = new Uint16Array(fromFloat32(values, "F16").buffer);
  for (let i = 0; i < values.length; i++) {
    assert.ok(Object.is(f16BitsToF32(halves[i]), Math.f16round(values[i])), `value ${values[i]}`);
  }
});

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

Deno.test("f16: the bulk conversions equal the scalar ones, on views at an offset", () => {
  const values = new Float32Array(40001);
  let seed = 777;
  for (let i = 0; i < values.length; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    // Every exponent, ties included (low 13 bits of the mantissa 0x1000), and a few specials.
    values[i] = floatOfBits(i % 7 === 0 ? (seed & 0xffffe000) | 0x1000 : seed);
  }
  values.set([0, -0, Infinity, -Infinity, 65520, 65519, 2 ** -25, 2 ** -24], 1);
  const src = values.subarray(1);
  const halves = new Uint16Array(src.length + 3).subarray(3);
  f32ToF16Into(src, halves);
  for (let i = 0; i < src.length; i++) {
    if (Number.isNaN(src[i])) assert.equal(halves[i] & 0x7c00, 0x7c00, `NaN at ${i}`);
    else assert.equal(halves[i], f32ToF16Bits(src[i]), `value ${src[i]}`);
  }
  const back = new Float32Array(halves.length + 1).subarray(1);
  f16ToF32Into(halves, back);
  for (let i = 0; i < halves.length; i++) {
    assert.ok(Object.is(back[i], f16BitsToF32(halves[i])) || Number.isNaN(back[i]), `bits ${i}`);
  }
  assert.throws(() => f16ToF32Into(halves, new Float32Array(2)), /!=/);
});
