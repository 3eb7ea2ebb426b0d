import assert from "node:assert/strict";
import { assertClose, finiteDiff, gpuTest, randomArray, rng } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { Tensor } from "../tensor.ts";
import { ropeDynamicInvFreqRef, ropeInvFreqRef, ropeRef } from "../ref/rope.ts";
import { rope, ropeDynamicInvFreq, ropeInvFreq } from "./rope.ts";

type Shape4 = [number, number, number, number];

function randomPositions(n: number, seed: number, max: number): Int32Array {
  const r = rng(seed);
  return Int32Array.from({ length: n }, () => Math.floor(r() * max));
}

async function check(shape: Shape4, maxPos: number, theta: number, seed: number, atol = 5e-7) {
  const [B, T] = shape;
  const xs = randomArray(shape.reduce((a, b) => a * b), seed);
  const ps = randomPositions(B * T, seed + 1, maxPos);
  const y = rope(Tensor.from(xs, shape), Tensor.from(ps, [B, T], "i32"), { theta });
  const expected = ropeRef(xs, ps, shape, { theta });
  assertClose(await y.toArray(), expected, { atol, rtol: 0, label: `rope ${shape} pos<${maxPos}` });
}

gpuTest("rope forward matches the reference on odd shapes", async () => {
  await check([2, 3, 3, 10], 50, 10000, 1);
  await check([1, 5, 2, 2], 20, 10000, 2);
  await check([3, 7, 5, 64], 4096, 1e6, 3); // 3*7*5*32 = 3360 pairs: not a multiple of 256
});

gpuTest("rope stays accurate at large positions", async () => {
  await check([2, 4, 1, 128], 32768, 1e6, 4);
  await check([1, 8, 2, 64], 32768, 10000, 5);
  await check([1, 6, 1, 16], 400000, 10000, 6);
});

gpuTest(
  "rope equals the direct formula: identity at 0, pair i turned by p * inv_freq_i",
  async () => {
    assertClose(ropeInvFreq(10000, 4), [1, 0.01], { atol: 0, rtol: 1e-7 });
    assert.deepEqual(ropeInvFreq(1e6, 128), ropeInvFreqRef(1e6, 128));
    // x [1, 2, 1, 4]: position 0, then position 3 with unit vectors in both pairs' halves.
    const xs = [0.5, -1.5, 2, 3, 1, 0, 0, 1];
    const y = await rope(Tensor.from(xs, [1, 2, 1, 4]), Tensor.from([0, 3], [1, 2], "i32"), {
      theta: 10000,
    }).toArray();
    assert.deepEqual([...y.slice(0, 4)], [0.5, -1.5, 2, 3]);
    const a0 = 3, a1 = Math.fround(3 * Math.fround(0.01));
    assertClose(y.slice(4), [Math.cos(a0), -Math.sin(a1), Math.sin(a0), Math.cos(a1)], {
      atol: 1e-6,
    });
  },
);

gpuTest("rope decodes one step per sequence at its own position", async () => {
  // A [B, T] pass and B x T single-token passes (as in KV-cache decoding) must agree.
  const shape: Shape4 = [3, 4, 2, 8];
  const xs = randomArray(3 * 4 * 2 * 8, 7);
  const ps = Int32Array.from([5, 6, 7, 8, 0, 1, 2, 3, 1, 1, 2, 3]); // row 2 is left-padded
  const full = await rope(Tensor.from(xs, shape), Tensor.from(ps, [3, 4], "i32"), {
    theta: 10000,
  }).toArray();
  const x = Tensor.from(xs, shape).reshape([12, 1, 2, 8]);
  const step = await rope(x, Tensor.from(ps, [12, 1], "i32"), { theta: 10000 }).toArray();
  assert.deepEqual([...step], [...full]);
});

gpuTest("rope backward rotates by the negative angle", async () => {
  const shape: Shape4 = [2, 3, 3, 6];
  const n = 2 * 3 * 3 * 6;
  const xs = randomArray(n, 8), gs = randomArray(n, 9);
  const ps = randomPositions(6, 10, 1000);
  const x = Tensor.from(xs, shape);
  x.requiresGrad = true;
  backward(rope(x, Tensor.from(ps, [2, 3], "i32"), { theta: 10000 }), Tensor.from(gs, shape));
  const expected = ropeRef(gs, ps, shape, { theta: 10000, inverse: true });
  assertClose(await x.grad!.toArray(), expected, { atol: 2e-6, rtol: 0 });
  // The reference backward is the gradient of sum(g * rope(x)).
  const fd = finiteDiff((v) => {
    const y = ropeRef(Float32Array.from(v), ps, shape, { theta: 10000 });
    return y.reduce((a, yi, i) => a + yi * gs[i], 0);
  }, xs);
  assertClose(expected, fd, { atol: 1e-3, rtol: 1e-3, label: "vs finite differences" });
});

gpuTest("rope takes precomputed inverse frequencies", async () => {
  const shape: Shape4 = [1, 3, 2, 6];
  const xs = randomArray(36, 11);
  const ps = Tensor.from([4, 9, 300], [1, 3], "i32");
  const y = rope(Tensor.from(xs, shape), ps, { theta: 0, invFreq: ropeInvFreq(500, 6) });
  const expected = ropeRef(xs, Int32Array.from([4, 9, 300]), shape, { theta: 500 });
  assertClose(await y.toArray(), expected, { atol: 2e-6, rtol: 0 });
});

gpuTest("rope scales cos and sin, forward and backward, with a kept table", async () => {
  const shape: Shape4 = [2, 3, 2, 8];
  const xs = randomArray(96, 12), gs = randomArray(96, 13);
  const ps = Int32Array.from([0, 5, 77, 1, 2, 3]);
  const table = ropeInvFreq(1e4, 8);
  const kept = Tensor.from(table, [4], "f32", "table").keep();
  const x = Tensor.from(xs, shape);
  x.requiresGrad = true;
  const y = rope(x, Tensor.from(ps, [2, 3], "i32"), { theta: 0, invFreq: kept, scale: 1.25 });
  const expected = ropeRef(xs, ps, shape, { theta: 0, invFreq: table, scale: 1.25 });
  assertClose(await y.toArray(), expected, { atol: 2e-6, rtol: 0 });
  // Scaling both rotations by s multiplies the plain rotation by s.
  const plain = ropeRef(xs, ps, shape, { theta: 1e4 });
  assertClose(expected, plain.map((v) => v * 1.25), { atol: 1e-6, rtol: 0, label: "ref scale" });
  backward(y, Tensor.from(gs, shape));
  const gExpected = ropeRef(gs, ps, shape, { theta: 1e4, inverse: true, scale: 1.25 });
  assertClose(await x.grad!.toArray(), gExpected, { atol: 2e-6, rtol: 0 });
  assert.equal(kept.disposed, false, "a caller's table is not disposed by rope");
  kept.dispose();
});

gpuTest("dynamic NTK table matches the f32 reference and the formula", async () => {
  const o = { theta: 1e4, headDim: 16, factor: 4, maxPositionEmbeddings: 32 };
  // Longest sequence 100 > 32: the base grows; within 32 it is theta's table.
  for (const [ps, label] of [[[3, 99, 40, 0], "L=100"], [[5, 31, 2, 0], "L<=M"]] as const) {
    const got = await ropeDynamicInvFreq(Tensor.from(ps, [2, 2], "i32"), o).toArray();
    const ref = ropeDynamicInvFreqRef(ps, o);
    assertClose(got, ref, { atol: 0, rtol: 3e-6, label });
  }
  // The reference against the formula in f64, written out.
  const L = 100, base = 1e4 * Math.pow((4 * L) / 32 - 3, 16 / 14);
  const direct = Array.from({ length: 8 }, (_, i) => 1 / Math.pow(base, (2 * i) / 16));
  assertClose(ropeDynamicInvFreqRef([99], o), direct, { atol: 0, rtol: 2e-6, label: "formula" });
  assert.deepEqual(ropeDynamicInvFreqRef([31], o), ropeInvFreqRef(1e4, 16));
  assert.throws(
    () => ropeDynamicInvFreq(Tensor.from([1], [1, 1], "f32"), o),
    /expected i32 positions/,
  );
});

gpuTest("rope rejects bad shapes and dtypes, naming them", () => {
  const ps = Tensor.empty([2, 3], "i32");
  assert.throws(
    () => rope(Tensor.empty([2, 3, 4]), ps, { theta: 1e4 }),
    /rope: x must be \[B, T, H, D\].*x \[2, 3, 4\] f32, positions \[2, 3\] i32/,
  );
  assert.throws(
    () => rope(Tensor.empty([2, 3, 1, 5]), ps, { theta: 1e4 }),
    /D even.*\[2, 3, 1, 5\]/,
  );
  assert.throws(
    () => rope(Tensor.empty([2, 4, 1, 8]), ps, { theta: 1e4 }),
    /positions must be \[B, T\].*x \[2, 4, 1, 8\] f32, positions \[2, 3\] i32/,
  );
  assert.throws(
    () => rope(Tensor.empty([2, 3, 1, 8]), Tensor.empty([2, 3]), { theta: 1e4 }),
    /expected f32 x and i32 positions.*positions \[2, 3\] f32/,
  );
  assert.throws(() => rope(Tensor.empty([2, 3, 1, 8]), ps, { theta: -1 }), /theta must be/);
  assert.throws(
    () => rope(Tensor.empty([2, 3, 1, 8]), ps, { theta: 1, invFreq: new Float32Array(3) }),
    /invFreq has 3 values, expected D\/2 = 4/,
  );
  assert.throws(() => rope(Tensor.empty([2, 3, 1, 8]), ps, { theta: 1, scale: 0 }), /scale must/);
});
