import assert from "node:assert/strict";
import { gpu } from "../../gpu/mod.ts";
import { assertClose, finiteDiff, gpuTest, randomArray } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import * as ref from "../ref/matmul.ts";
import { Tensor } from "../tensor.ts";
import { linear, matmul, matmulTiled } from "./matmul.ts";
import { gemmNew, type TileName } from "./matmul_kernel.ts";

const TRANSPOSES = [[false, false], [true, false], [false, true], [true, true]] as const;
const TOL = { atol: 1e-4, rtol: 1e-4 };

/** Random operands for op(A) [M, K] @ op(B) [K, N] in their stored layouts. */
function operands(d: ref.MatmulDims, seed: number, batchShape: number[] = []) {
  const { m, n, k } = d;
  const aShape = [...(d.sharedA ? [] : batchShape), ...(d.transA ? [k, m] : [m, k])];
  const bShape = [...(d.sharedB ? [] : batchShape), ...(d.transB ? [n, k] : [k, n])];
  const a = randomArray(aShape.reduce((x, y) => x * y, 1), seed);
  const b = randomArray(bShape.reduce((x, y) => x * y, 1), seed + 1);
  return { a, b, A: Tensor.from(a, aShape), B: Tensor.from(b, bShape) };
}

gpuTest("matmul matches the reference for every transpose at odd sizes", async () => {
  const sizes = [[1, 1, 1], [3, 17, 5], [17, 33, 65], [33, 3, 2], [1, 40, 9]];
  let seed = 1;
  for (const [m, n, k] of sizes) {
    for (const [transA, transB] of TRANSPOSES) {
      const d = { batch: 1, m, n, k, transA, transB };
      const { a, b, A, B } = operands(d, seed += 2);
      const C = matmul(A, B, { transA, transB });
      assert.deepEqual(C.shape, [m, n]);
      assertClose(await C.toArray(), ref.matmul(a, b, d), { ...TOL, label: JSON.stringify(d) });
    }
  }
});

gpuTest(
  "matmul tile variants are correct at sizes that are not multiples of the tile",
  async () => {
    const cases: [TileName, number, number, number, boolean, boolean][] = [
      ["small", 37, 35, 11, true, false],
      ["medium", 70, 67, 19, true, true],
      ["large", 131, 129, 9, false, false],
      ["wide", 67, 131, 13, false, true],
      ["tall", 129, 66, 10, true, false],
    ];
    for (const [tile, m, n, k, transA, transB] of cases) {
      const d = { batch: 2, m, n, k, transA, transB };
      const { a, b, A, B } = operands(d, 7, [2]);
      const C = matmulTiled(A, B, { transA, transB, tile });
      assertClose(await C.toArray(), ref.matmul(a, b, d), { ...TOL, label: tile });
    }
  },
);

gpuTest(
  "split-K products equal the unsplit product (every transpose, ragged K, bias)",
  async () => {
    // [m, n, k, splits, tile]: splits that divide K into unequal slices, a last slice shorter than
    // the K step, more splits than K steps (clamped), and the LoRA backward's shape of dB.
    const cases: [number, number, number, number, TileName][] = [
      [9, 7, 83, 3, "small"],
      [33, 5, 40, 4, "medium"],
      [4, 6, 9, 7, "small"],
      [24, 8, 200, 5, "small"],
    ];
    let seed = 30;
    for (const [m, n, k, splits, tile] of cases) {
      for (const [transA, transB] of TRANSPOSES) {
        const d = { batch: 1, m, n, k, transA, transB };
        const { a, b, A, B } = operands(d, seed += 2);
        const bias = randomArray(n, seed + 9);
        const gemm = { ...d, strideA: 0, strideB: 0 };
        const C = gemmNew(A, B, [m, n], gemm, { tile, splits });
        const label = JSON.stringify({ ...d, splits });
        assertClose(await C.toArray(), ref.matmul(a, b, d), { ...TOL, label });
        const Bias = Tensor.from(bias, [n]);
        const CB = gemmNew(A, B, [m, n], gemm, { tile, splits, bias: Bias });
        const want = ref.matmul(a, b, d).map((v, i) => v + bias[i % n]);
        assertClose(await CB.toArray(), want, { ...TOL, label: `${label} + bias` });
        for (const t of [A, B, C, Bias, CB]) t.dispose();
      }
    }
  },
);

gpuTest("batched matmul, with a 2-D operand shared across the batch", async () => {
  const cases: [ref.MatmulDims, number[]][] = [
    [{ batch: 6, m: 5, n: 4, k: 7 }, [2, 3]],
    [{ batch: 3, m: 5, n: 4, k: 7, sharedB: true }, [3]], // folded into one product
    [{ batch: 3, m: 5, n: 4, k: 7, sharedB: true, transA: true, transB: true }, [3]],
    [{ batch: 2, m: 5, n: 4, k: 7, sharedA: true, transB: true }, [2]],
  ];
  for (const [d, batchShape] of cases) {
    const { a, b, A, B } = operands(d, 11, batchShape);
    const C = matmul(A, B, d);
    assert.deepEqual(C.shape, [...batchShape, d.m, d.n]);
    assertClose(await C.toArray(), ref.matmul(a, b, d), { ...TOL, label: JSON.stringify(d) });
  }
});

gpuTest("the reference backward agrees with finite differences", () => {
  const d = { batch: 2, m: 2, n: 3, k: 2, transA: true, sharedB: true, transB: true };
  const a = randomArray(8, 3), b = randomArray(6, 4), g = randomArray(12, 5);
  const loss = (x: ArrayLike<number>, y: ArrayLike<number>) =>
    ref.matmul(x, y, d).reduce((s, v, i) => s + v * g[i], 0);
  const { da, db } = ref.matmulBackward(a, b, g, d);
  assertClose(da, finiteDiff((x) => loss(x, b), a), { atol: 1e-3 });
  assertClose(db, finiteDiff((y) => loss(a, y), b), { atol: 1e-3 });
});

gpuTest(
  "matmul backward matches the reference (transposes, batches, shared operands)",
  async () => {
    const cases: [ref.MatmulDims, number[]][] = [];
    for (const [transA, transB] of TRANSPOSES) {
      cases.push([{ batch: 2, m: 5, n: 3, k: 9, transA, transB }, [2]]);
      cases.push([{ batch: 3, m: 4, n: 6, k: 3, transA, transB, sharedB: true }, [3]]);
    }
    cases.push([{ batch: 2, m: 3, n: 5, k: 4, sharedA: true, transA: true }, [2]]);
    for (const [d, batchShape] of cases) {
      const { a, b, A, B } = operands(d, 21, batchShape);
      A.requiresGrad = B.requiresGrad = true;
      const C = matmul(A, B, d);
      const g = randomArray(C.size, 23);
      backward(C, Tensor.from(g, C.shape));
      const { da, db } = ref.matmulBackward(a, b, g, d);
      const label = JSON.stringify(d);
      assertClose(await A.grad!.toArray(), da, { ...TOL, label: `dA ${label}` });
      assertClose(await B.grad!.toArray(), db, { ...TOL, label: `dB ${label}` });
      A.grad!.dispose();
      B.grad!.dispose();
    }
  },
);

gpuTest("linear forward and backward, with and without bias", async () => {
  const [rows, inF, outF] = [2 * 7, 13, 10];
  for (const withBias of [true, false]) {
    const x = randomArray(rows * inF, 31), w = randomArray(outF * inF, 32);
    const bias = withBias ? randomArray(outF, 33) : null;
    const X = Tensor.from(x, [2, 7, inF]), W = Tensor.from(w, [outF, inF]);
    const Bias = bias ? Tensor.from(bias, [outF]) : null;
    for (const t of [X, W, Bias]) if (t) t.requiresGrad = true;
    const Y = linear(X, W, Bias);
    assert.deepEqual(Y.shape, [2, 7, outF]);
    assertClose(await Y.toArray(), ref.linear(x, w, bias, rows, inF, outF), TOL);
    const g = randomArray(Y.size, 34);
    backward(Y, Tensor.from(g, Y.shape));
    const d = { batch: 1, m: rows, n: outF, k: inF, transB: true };
    const { da, db } = ref.matmulBackward(x, w, g, d);
    assertClose(await X.grad!.toArray(), da, { ...TOL, label: "dx" });
    assertClose(await W.grad!.toArray(), db, { ...TOL, label: "dW" });
    if (Bias) assertClose(await Bias.grad!.toArray(), ref.colsum(g, rows, outF), TOL);
    for (const t of [X, W, Bias]) t?.grad?.dispose();
  }
});

gpuTest("f16 weights (only where the GPU has shader-f16)", async () => {
  const [rows, inF, outF] = [9, 33, 17];
  const x = randomArray(rows * inF, 41), w = randomArray(outF * inF, 42);
  const bias = randomArray(outF, 43);
  const W = Tensor.from(w, [outF, inF], "f16"), Bias = Tensor.from(bias, [outF], "f16");
  const wr = await W.toArray(), br = await Bias.toArray(); // the f16-rounded values
  const Y = linear(Tensor.from(x, [rows, inF]), W, Bias);
  assertClose(await Y.toArray(), ref.linear(x, wr, br, rows, inF, outF), { atol: 1e-3 });
  const A = Tensor.from(x, [rows, inF], "f16"), ar = await A.toArray();
  const C = matmul(A, W, { transB: true });
  const d = { batch: 1, m: rows, n: outF, k: inF, transB: true };
  assertClose(await C.toArray(), ref.matmul(ar, wr, d), { atol: 1e-3 });
}, { f16: true });

gpuTest("bad inputs throw errors naming the op, shapes and dtypes", () => {
  const t = (shape: number[], dtype: "f32" | "i32" = "f32") =>
    Tensor.from(new Array(shape.reduce((x, y) => x * y, 1)).fill(0), shape, dtype);
  assert.throws(
    () => matmul(t([2, 3]), t([4, 5])),
    /matmul: inner dimensions differ: a \[2, 3\] f32 \(transA=false\) has K=3, b \[4, 5\] f32/,
  );
  assert.throws(() => matmul(t([2, 3]), t([2, 5]), { transA: true, transB: true }), /K=2.*K=5/);
  assert.throws(
    () => matmul(t([2, 2, 3]), t([3, 3, 4])),
    /matmul: batch dimensions differ: a \[2, 2, 3\] f32 vs b \[3, 3, 4\] f32/,
  );
  assert.throws(() => matmul(t([3]), t([3, 4])), /matmul: a \[3\] f32 needs at least 2 dims/);
  assert.throws(() => matmul(t([2, 3], "i32"), t([3, 4])), /matmul: a \[2, 3\] i32 must be f32/);
  if (!gpu().hasF16) {
    const h = Tensor.empty([3, 4], "f16");
    assert.throws(() => matmul(t([2, 3]), h), /matmul: b \[3, 4\] f16 needs shader-f16/);
  }
  assert.throws(
    () => linear(t([2, 5]), t([4, 6])),
    /linear: x must end in in=6: x \[2, 5\] f32, weight \[4, 6\] f32/,
  );
  assert.throws(() => linear(t([2, 6]), t([4, 6]), t([5])), /bias must be \[4\].*bias \[5\] f32/);
  assert.throws(() => linear(t([2, 6]), t([4, 6, 1])), /weight must be 2-D/);
  assert.throws(() => linear(t([2, 6]), t([4, 6], "i32")), /linear: weight \[4, 6\] i32/);
});
