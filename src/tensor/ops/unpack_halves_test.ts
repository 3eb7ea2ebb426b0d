import assert from "node:assert/strict";
import { gpuTest, rng } from "../../testing/mod.ts";
import { unpackHalvesRef } from "../ref/unpack_halves.ts";
import { Tensor } from "../tensor.ts";
import { unpackHalves } from "./unpack_halves.ts";

gpuTest("unpackHalves gives the f32 values of f16 tensors like the reference", async () => {
  const r = rng(5);
  // Sizes below, at and past a workgroup of pairs; subnormals, zeros and infinities included.
  for (const shape of [[2], [3, 6], [2, 257, 2], [1, 1000]]) {
    const n = shape.reduce((a, b) => a * b, 1);
    const bits = Uint16Array.from({ length: n }, () => {
      const h = Math.floor(r() * 0x10000);
      return (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0 ? h & 0xfc00 : h; // no NaN
    });
    bits.set([0x0000, 0x8000].slice(0, n));
    if (n > 4) bits.set([0x0001, 0x7c00, 0xfc00], 2);
    const want = unpackHalvesRef(bits);
    // Tensor.from rounds f32 to f16 on the CPU: these values are halves already, kept exactly.
    const y = unpackHalves(Tensor.from(want, shape, "f16"));
    assert.deepEqual(y.shape, shape);
    assert.equal(y.dtype, "f32");
    assert.deepEqual([...(await y.toArray())], [...want], `shape ${shape}`);
  }
});

gpuTest("unpackHalves rejects f32 tensors and odd sizes", () => {
  assert.throws(() => unpackHalves(Tensor.from([1, 2], [2])), /f16 tensor of an even size/);
  assert.throws(() => unpackHalves(Tensor.from([1, 2, 3], [3], "f16")), /f32|even size/);
});
