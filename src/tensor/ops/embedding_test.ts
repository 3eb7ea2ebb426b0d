import assert from "node:assert/strict";
import { gpu } from "../../gpu/mod.ts";
import { assertClose, finiteDiff, gpuTest, randomArray, rng } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { Tensor } from "../tensor.ts";
import { embeddingBackwardRef, embeddingRef } from "../ref/embedding.ts";
import { embedding, embeddingIds } from "./embedding.ts";

function randomIds(n: number, seed: number, V: number): Int32Array {
  const r = rng(seed);
  return Int32Array.from({ length: n }, () => Math.floor(r() * V));
}

// [ids shape, V, C]: C below and above the workgroup, N * C not a multiple of 256, few distinct
// ids (many duplicates) and more ids than vocabulary rows.
const CASES: [number[], number, number][] = [
  [[1], 1, 1],
  [[3, 5], 11, 7],
  [[2, 9], 4, 300],
  [[67], 5, 13],
];

gpuTest("embedding gathers rows like the reference", async () => {
  for (const [i, [shape, V, C]] of CASES.entries()) {
    const n = shape.reduce((a, b) => a * b, 1);
    const ids = randomIds(n, 10 + i, V);
    const table = randomArray(V * C, 20 + i);
    const y = embedding(Tensor.from(ids, shape, "i32"), Tensor.from(table, [V, C]));
    assert.deepEqual(y.shape, [...shape, C]);
    assert.deepEqual([...await y.toArray()], [...embeddingRef(ids, table, C)]);
  }
});

gpuTest("embedding backward adds up repeated ids and is deterministic", async () => {
  for (const [i, [shape, V, C]] of CASES.entries()) {
    const n = shape.reduce((a, b) => a * b, 1);
    const ids = randomIds(n, 30 + i, V);
    const gs = randomArray(n * C, 40 + i);
    const runs: Float32Array[] = [];
    for (let rep = 0; rep < 2; rep++) {
      const table = Tensor.from(randomArray(V * C, 50 + i), [V, C]);
      table.requiresGrad = true;
      backward(embedding(Tensor.from(ids, shape, "i32"), table), Tensor.from(gs, [...shape, C]));
      runs.push(await table.grad!.toArray() as Float32Array);
    }
    const ref = embeddingBackwardRef(ids, gs, V, C);
    assertClose(runs[0], ref, { atol: 1e-5, rtol: 1e-5, label: `grad ${shape} V=${V} C=${C}` });
    assert.deepEqual([...runs[1]], [...runs[0]], "bitwise identical across runs");
  }
});

gpuTest("embedding backward reference agrees with finite differences", () => {
  const V = 4, C = 3;
  const ids = Int32Array.from([2, 0, 2, 2, 3]);
  const gs = randomArray(ids.length * C, 60);
  const fd = finiteDiff((t) => {
    const y = embeddingRef(ids, Float32Array.from(t), C);
    return y.reduce((a, v, i) => a + v * gs[i], 0);
  }, randomArray(V * C, 61));
  assertClose(embeddingBackwardRef(ids, gs, V, C), fd, { atol: 1e-3, rtol: 1e-3 });
});

gpuTest("embedding clamps out-of-range ids on the GPU, forward and backward", async () => {
  const V = 3, C = 2;
  const ids = Int32Array.from([-5, 1, 3, 99, 2]);
  const tableData = Float32Array.from([1, 2, 3, 4, 5, 6]);
  const table = Tensor.from(tableData, [V, C]);
  table.requiresGrad = true;
  const y = embedding(Tensor.from(ids, [5], "i32"), table);
  assert.deepEqual([...await y.toArray()], [1, 2, 3, 4, 5, 6, 5, 6, 5, 6]);
  backward(y, Tensor.from(new Float32Array(10).fill(1), [5, 2]));
  assert.deepEqual([...await table.grad!.toArray()], [1, 1, 1, 1, 3, 3]);
});

gpuTest("embedding gradients accumulate when the table is used twice (tied weights)", async () => {
  const table = Tensor.from(randomArray(8, 70), [4, 2]);
  table.requiresGrad = true;
  const a = embedding(Tensor.from([1, 3], [2], "i32"), table);
  const b = embedding(Tensor.from([3], [1], "i32"), table);
  backward(a, Tensor.from([1, 2, 3, 4], [2, 2]));
  backward(b, Tensor.from([10, 20], [1, 2]));
  assert.deepEqual([...await table.grad!.toArray()], [0, 0, 1, 2, 0, 0, 13, 24]);
});

gpuTest("embedding gathers from an f16 table when the adapter has shader-f16", async () => {
  const table = Float32Array.from([0.5, -1, 2, 3.25, 1024, -0.125]);
  const y = embedding(Tensor.from([2, 0, 2], [3], "i32"), Tensor.from(table, [3, 2], "f16"));
  assert.equal(y.dtype, "f16");
  assert.deepEqual([...await y.toArray()], [1024, -0.125, 0.5, -1, 1024, -0.125]);
}, { f16: true });

gpuTest("embedding rejects bad ids and tables, naming shapes and dtypes", () => {
  const table = Tensor.empty([5, 4]);
  assert.throws(
    () => embedding(Tensor.empty([2, 3], "f32"), table),
    /embedding: ids must be i32, got ids \[2, 3\] f32, table \[5, 4\] f32/,
  );
  assert.throws(
    () => embedding(Tensor.empty([2], "i32"), Tensor.empty([20])),
    /table must be \[V, C\].*table \[20\] f32/,
  );
  assert.throws(
    () => embedding(Tensor.empty([2], "i32"), Tensor.empty([5, 4], "i32")),
    /table must be f32.*table \[5, 4\] i32/,
  );
  if (!gpu().hasF16) {
    assert.throws(
      () => embedding(Tensor.empty([2], "i32"), Tensor.empty([5, 4], "f16")),
      /needs shader-f16/,
    );
  }
  assert.throws(
    () => embeddingIds([1, 4, 5], [3], 5),
    /embedding: id 5 at index 2 of ids \[3\] is outside the vocabulary \[0, 5\)/,
  );
  assert.throws(() => embeddingIds([0, -1], [2], 5), /id -1 at index 1/);
  assert.equal(embeddingIds([0, 4], [1, 2], 5).dtype, "i32");
});
