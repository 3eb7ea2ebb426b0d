import assert from "node:assert/strict";
import { assertClose, finiteDiff, gpuTest, randomArray } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { Tensor } from "../tensor.ts";
import { max, mean, type ReduceOptions, sum, sumTo } from "./reduce.ts";
import { maxGradRef, type ReduceOp, reduceRef, sumGradRef } from "../ref/reduce.ts";
import { sumToRef } from "../ref/elementwise.ts";

const OPS = { sum, mean, max };
const size = (s: readonly number[]) => s.reduce((p, d) => p * d, 1);
const dot = (a: ArrayLike<number>, w: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * w[i];
  return s;
};

const CASES: [number[], ReduceOptions][] = [
  [[3, 5, 7], {}],
  [[3, 5, 7], { axis: 0 }],
  [[3, 5, 7], { axis: 1, keepDims: true }],
  [[3, 5, 7], { axis: -1 }],
  [[3, 5, 7], { axis: [0, 2] }],
  [[3, 5, 7], { axis: [-3, -1], keepDims: true }],
  [[2, 1, 3, 4], { axis: [1, 3] }],
  [[600], {}],
  [[2, 5003], { axis: -1 }], // one long row per workgroup, not a multiple of 256
  [[20000], {}], // split into chunks, then combined
  [[3, 9001], { axis: 1 }], // split, with several outputs
  [[9001, 3], { axis: 0, keepDims: true }], // split along a strided axis
  [[], {}],
  [[4, 3], { axis: [] }],
];

gpuTest("sum, mean and max match the reference over any axes", async () => {
  let seed = 1;
  for (const [shape, opts] of CASES) {
    const x = randomArray(size(shape), seed++);
    for (const op of ["sum", "mean", "max"] as ReduceOp[]) {
      const out = OPS[op](Tensor.from(x, shape), opts);
      const ref = reduceRef(op, x, shape, opts);
      const label = `${op} [${shape}] ${JSON.stringify(opts)}`;
      assert.deepEqual(out.shape, ref.shape, label);
      assertClose(await out.toArray(), ref.data, { label, atol: 1e-4, rtol: 1e-4 });
    }
  }
});

gpuTest("sum, mean and max backward (finite differences)", async () => {
  let seed = 50;
  for (const [shape, opts] of [...CASES.slice(0, 7), CASES[8], CASES[10]]) {
    for (const op of ["sum", "mean", "max"] as ReduceOp[]) {
      const x = randomArray(size(shape), seed++);
      const ref = reduceRef(op, x, shape, opts);
      const w = randomArray(ref.data.length, seed++);
      const tx = Tensor.from(x, shape);
      tx.requiresGrad = true;
      backward(OPS[op](tx, opts), Tensor.from(w, ref.shape));
      const label = `d${op} [${shape}] ${JSON.stringify(opts)}`;
      // Finite differences on the small cases, the exact reference on the long row.
      const expected = op === "max"
        ? maxGradRef(ref.argmax, w, x.length)
        : x.length > 200
        ? sumGradRef(op, shape, w, opts)
        : finiteDiff((v) => dot(reduceRef(op, v, shape, opts).data, w), x);
      assertClose(await tx.grad!.toArray(), expected, { label, atol: 1e-3, rtol: 1e-3 });
    }
  }
});

gpuTest("max sends the gradient to the first of tied maxima", async () => {
  const x = Tensor.from([1, 3, 3, 2, 5, 5, 5, 0, -Infinity, -Infinity, -Infinity, -Infinity], [
    3,
    4,
  ]);
  x.requiresGrad = true;
  const m = max(x, { axis: 1 });
  assertClose(await m.toArray(), [3, 5, -Infinity]);
  backward(m, Tensor.from([1, 2, 3], [3]));
  assertClose(await x.grad!.toArray(), [0, 1, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]);
});

gpuTest("sumTo sums broadcast dims away and backpropagates by broadcasting", async () => {
  const shape = [3, 4, 5];
  const x = randomArray(60, 7);
  for (const to of [[4, 1], [5], [], [1, 4, 5], [3, 1, 1]]) {
    const tx = Tensor.from(x, shape);
    tx.requiresGrad = true;
    const y = sumTo(tx, to);
    assert.deepEqual(y.shape, to);
    assertClose(await y.toArray(), sumToRef(x, shape, to), { label: `sumTo [${to}]` });
    const w = randomArray(size(to), 8);
    backward(y, Tensor.from(w, to));
    const fd = finiteDiff((v) => dot(sumToRef(v, shape, to), w), x);
    assertClose(await tx.grad!.toArray(), fd, { atol: 1e-3, label: `d sumTo [${to}]` });
  }
  const t = Tensor.from(x, shape);
  assert.equal(sumTo(t, shape), t);
  assert.throws(() => sumTo(t, [2, 5]), /sumTo: \[3, 4, 5\] f32 cannot be summed to \[2, 5\]/);
  assert.throws(() => sumTo(t, [1, 3, 4, 5]), /cannot be summed to \[1, 3, 4, 5\]/);
});

gpuTest("empty tensors reduce to zeros", async () => {
  const s = sum(Tensor.from([], [0, 3]), { axis: 0 });
  assert.deepEqual(s.shape, [3]);
  assertClose(await s.toArray(), [0, 0, 0]);
});

gpuTest("bad axes and dtypes name the op, the shape and the dtype", () => {
  const x = Tensor.from(new Float32Array(6), [2, 3]);
  assert.throws(() => sum(x, { axis: 2 }), /sum: axis 2 is out of range for \[2, 3\] f32/);
  assert.throws(() => max(x, { axis: -3 }), /max: axis -3 is out of range for \[2, 3\] f32/);
  const i = Tensor.from(new Int32Array(6), [2, 3], "i32");
  assert.throws(() => mean(i), /mean: expected f32, got \[2, 3\] i32/);
});
