/** IEEE half on the CPU: scalar and bulk conversions against the bit patterns and the engine's. */
import assert from "node:assert/strict";
import { f16BitsToF32, f16ToF32Into, f32ToF16Bits, f32ToF16Into } from "./half.ts";

function floatOfBits(bits: number): number {
  return new Float32Array(new Uint32Array([bits]).buffer)[0];
}

/** f32 values to f16 bits through the bulk path. */
function halvesOf(values: Float32Array): Uint16Array {
  const out = new Uint16Array(values.length);
  f32ToF16Into(values, out);
  return out;
}

/** f16 bits to f32 values through the bulk path. */
function floatsOf(halves: Uint16Array): Float32Array {
  const out = new Float32Array(halves.length);
  f16ToF32Into(halves, out);
  return out;
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
  const lowPayload = halvesOf(new Float32Array(new Uint32Array([0x7f800001]).buffer));
  assert.ok(Number.isNaN(f16BitsToF32(lowPayload[0])));
});

Deno.test("f16: decoding every bit pattern agrees with Float16Array", () => {
  const all = new Uint16Array(65536).map((_, i) => i);
  const ours = floatsOf(all);
  const reference = new Float16Array(all.buffer);
  for (let i = 0; i < 65536; i++) {
    if (Number.isNaN(reference[i])) assert.ok(Number.isNaN(ours[i]), `bits ${i}`);
    else assert.ok(Object.is(ours[i], reference[i]), `bits ${i}: ${ours[i]} vs ${reference[i]}`);
    assert.ok(Object.is(f16BitsToF32(i), ours[i]) || Number.isNaN(ours[i]));
  }
  // Every finite f16 and infinity round-trips exactly through f32.
  const back = halvesOf(ours);
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
  const halves = halvesOf(values);
  for (let i = 0; i < values.length; i++) {
    assert.ok(Object.is(f16BitsToF32(halves[i]), Math.f16round(values[i])), `value ${values[i]}`);
  }
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
