import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import * as ref from "../ref/matmul.ts";
import { roundToF16 } from "../half.ts";
import { Tensor } from "../tensor.ts";
import { noGrad } from "../autograd.ts";
import { add } from "./elementwise.ts";
import { matmul } from "./matmul.ts";
import { matmulCat } from "./matmul_cat.ts";
import { product } from "./test_matmul_cat.ts";

const TOL = { atol: 1e-4, rtol: 1e-4 };

gpuTest("matmulCat: two products joined along K, every transposition of each", async () => {
  // K1 = 13 and K2 = 11 are not multiples of the K step (8): a step straddles the seam.
  const [m, n, k1, k2] = [19, 21, 13, 11];
  let seed = 10;
  for (let flags = 0; flags < 16; flags++) {
    const [tA, tB, tA2, tB2] = [0, 1, 2, 3].map((bit) => (flags >> bit & 1) === 1);
    const p1 = product(m, n, k1, tA, tB, seed += 2), p2 = product(m, n, k2, tA2, tB2, seed += 2);
    const Y = matmulCat(p1.tensors, p2.tensors, { scale: 0.75, tile: "small" });
    const want = ref.matmulCat(p1.arrays, p2.arrays, { m, n, scale: 0.75 });
    assertClose(await Y.toArray(), want, { ...TOL, label: JSON.stringify({ tA, tB, tA2, tB2 }) });
  }
});

gpuTest("matmulCat: bias and residual epilogues, split K across the seam", async () => {
  // [m, n, k1, k2, splits]: with K steps of 8, splits of 8 put the seam (13, 5, 30) inside one.
  const cases = [[37, 35, 13, 11, 1], [9, 7, 13, 70, 3], [33, 6, 5, 4, 2], [5, 40, 30, 40, 9]];
  let seed = 100;
  for (const [m, n, k1, k2, splits] of cases) {
    const p1 = product(m, n, k1, false, true, seed += 4), p2 = product(m, n, k2, false, true, seed);
    const bias = randomArray(n, seed + 2), residual = randomArray(m * n, seed + 3);
    for (
      const [withBias, withResid] of [[false, false], [true, false], [false, true], [true, true]]
    ) {
      const Y = matmulCat(p1.tensors, p2.tensors, {
        scale: 2,
        tile: "small",
        splits,
        bias: withBias ? Tensor.from(bias, [n]) : null,
        residual: withResid ? Tensor.from(residual, [m, n]) : null,
      });
      const want = ref.matmulCat(p1.arrays, p2.arrays, {
        m,
        n,
        scale: 2,
        bias: withBias ? bias : undefined,
        residual: withResid ? residual : undefined,
      });
      const label = JSON.stringify({ m, n, k1, k2, splits, withBias, withResid });
      assertClose(await Y.toArray(), want, { ...TOL, label });
    }
  }
});

gpuTest("matmulCat: the default tile and split equal the two plain products added", async () => {
  const [m, n, k1, k2] = [70, 66, 40, 9];
  const p1 = product(m, n, k1, false, false, 200), p2 = product(m, n, k2, true, false, 210);
  const Y = matmulCat(p1.tensors, p2.tensors);
  const want = ref.matmulCat(p1.arrays, p2.arrays, { m, n });
  assertClose(await Y.toArray(), want, TOL);
  const plain = add(
    matmul(p1.tensors.a, p1.tensors.b),
    matmul(p2.tensors.a, p2.tensors.b, p2.tensors),
  );
  assertClose(await Y.toArray(), await plain.toArray(), { ...TOL, label: "vs matmul + matmul" });
});

gpuTest("matmulCat: an f16 first product beside an f32 second", async () => {
  const [m, n, k1, k2] = [17, 24, 20, 8];
  const p1 = product(m, n, k1, false, true, 300), p2 = product(m, n, k2, false, true, 310);
  const w16 = Tensor.from(p1.arrays.b, [n, k1], "f16");
  const Y = matmulCat({ ...p1.tensors, b: w16 }, p2.tensors, { scale: 0.5, tile: "small" });
  const want = ref.matmulCat({ ...p1.arrays, b: p1.arrays.b.map(roundToF16) }, p2.arrays, {
    m,
    n,
    scale: 0.5,
  });
  assertClose(await Y.toArray(), want, TOL);
}, { f16: true });

gpuTest("matmulCat: mismatched products and recorded inputs are errors", () => {
  const a = Tensor.from(randomArray(12, 1), [3, 4]), b = Tensor.from(randomArray(20, 2), [4, 5]);
  const a2 = Tensor.from(randomArray(6, 3), [3, 2]), b2 = Tensor.from(randomArray(12, 4), [2, 6]);
  assert.throws(
    () => matmulCat({ a, b }, { a: a2, b: b2 }),
    /outputs differ: \[3, 5\] and \[3, 6\]/,
  );
  assert.throws(() => matmulCat({ a, b }, { a: a2, b }), /second product's inner dimensions/);
  const w = Tensor.from(randomArray(20, 5), [4, 5]);
  w.requiresGrad = true;
  assert.throws(() => matmulCat({ a, b: w }, { a: a2, b: b2.reshape([2, 6]) }), /no backward/);
  noGrad(() => assert.throws(() => matmulCat({ a, b }, { a: a2, b: b2 }), /outputs differ/));
});
