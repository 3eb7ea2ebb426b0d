import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { linear as linearRef } from "../ref/matmul.ts";
import { rmsNormRef } from "../ref/rmsnorm.ts";
import { Tensor } from "../tensor.ts";
import { linearNorm, linearNormPolicy, sumSplitsNorm } from "./linear_norm.ts";
import { linear } from "./matmul.ts";
import { gemm } from "./matmul_kernel.ts";
import { sumSplits } from "./matmul_skinny.ts";
import { rmsNorm } from "./rmsnorm.ts";
import { sum } from "./reduce.ts";

const EPS = 1e-5;

gpuTest("sumSplitsNorm equals sumSplits then rmsNorm, bit for bit", async () => {
  // One to eight columns per invocation (rows of 100 to 2,048), splits 1 to 9 (rounds of four
  // and a rest), each epilogue.
  const cases = [[1, 100, 1], [3, 256, 2], [2, 1000, 6], [4, 1536, 9], [2, 2048, 4], [9, 96, 5]];
  for (const [rows, cols, splits] of cases) {
    for (const [bias, resid] of [[false, false], [true, false], [false, true], [true, true]]) {
      const seed = rows * 31 + cols + splits;
      const part = Tensor.from(randomArray(splits * rows * cols, seed), [splits, rows, cols]);
      const b = bias ? Tensor.from(randomArray(cols, seed + 1), [cols]) : null;
      const r = resid ? Tensor.from(randomArray(rows * cols, seed + 2), [rows, cols]) : null;
      const w = Tensor.from(randomArray(cols, seed + 3, 0.5, 1.5), [cols]);
      const y = Tensor.empty([rows, cols]), normed = Tensor.empty([rows, cols]);
      const d = { rows, cols, splits, eps: EPS, bias: b, residual: r, normWeight: w };
      sumSplitsNorm(part, { y, normed }, d);
      const y2 = Tensor.empty([rows, cols]);
      sumSplits(part, y2, { m: rows, n: cols, splits, bias: b, residual: r });
      const label = JSON.stringify({ rows, cols, splits, bias, resid });
      assert.deepEqual(await y.toArray(), await y2.toArray(), `y ${label}`);
      const n2 = rmsNorm(y2, w, { eps: EPS });
      assert.deepEqual(await normed.toArray(), await n2.toArray(), `normed ${label}`);
    }
  }
});

gpuTest("linearNorm: the product and its norm against the reference, split or not", async () => {
  const [m, n, k] = [6, 40, 48];
  const x = randomArray(m * k, 1), wt = randomArray(n * k, 2), bias = randomArray(n, 3);
  const h = randomArray(m * n, 4), nw = randomArray(n, 5, 0.5, 1.5);
  const X = Tensor.from(x, [2, 3, k]), W = Tensor.from(wt, [n, k]), B = Tensor.from(bias, [n]);
  const H = Tensor.from(h, [2, 3, n]), NW = Tensor.from(nw, [n]);
  const want = linearRef(x, wt, bias, m, k, n).map((v, i) => v + h[i]);
  const wantNorm = rmsNormRef(want, nw, EPS).y;
  for (const splits of [1, 3]) {
    const [y, normed] = linearNorm(X, W, B, NW, { residual: H, eps: EPS, splits });
    assert.deepEqual(y.shape, [2, 3, n]);
    assert.deepEqual(normed.shape, [2, 3, n]);
    assertClose(await y.toArray(), want, { atol: 1e-4, label: `y splits=${splits}` });
    assertClose(await normed.toArray(), wantNorm, { atol: 1e-4, label: `normed ${splits}` });
  }
});

gpuTest(
  "linearNorm equals the split product then rmsNorm bit for bit; so does policy off",
  async () => {
    const [m, n, k] = [5, 64, 96];
    const X = Tensor.from(randomArray(m * k, 11), [m, k]);
    const W = Tensor.from(randomArray(n * k, 12), [n, k]);
    const H = Tensor.from(randomArray(m * n, 13), [m, n]);
    const NW = Tensor.from(randomArray(n, 14, 0.5, 1.5), [n]);
    const d = { batch: 1, m, n, k, transA: false, transB: true, strideA: 0, strideB: 0 };
    for (const splits of [2, 4]) {
      linearNormPolicy.splits = splits;
      try {
        const [y, normed] = linearNorm(X, W, null, NW, { residual: H, eps: EPS });
        const y2 = Tensor.empty([m, n]);
        gemm(X, W, y2, d, { residual: H, splits }); // its own split sum
        assert.deepEqual(await y.toArray(), await y2.toArray(), `y, splits ${splits}`);
        const n2 = await rmsNorm(y2, NW, { eps: EPS }).toArray();
        assert.deepEqual(await normed.toArray(), n2, `normed, splits ${splits}`);
      } finally {
        linearNormPolicy.splits = null;
      }
    }
    linearNormPolicy.enabled = false;
    try {
      const [y3, n3] = linearNorm(X, W, null, NW, { residual: H, eps: EPS, splits: 4 });
      assert.deepEqual(await y3.toArray(), await linear(X, W, null, { residual: H }).toArray());
      assert.deepEqual(await n3.toArray(), await rmsNorm(y3, NW, { eps: EPS }).toArray());
    } finally {
      linearNormPolicy.enabled = true;
    }
  },
);

gpuTest("linearNorm under the tape is linear then rmsNorm, with their gradients", async () => {
  const [m, n, k] = [3, 8, 12];
  const X = Tensor.from(randomArray(m * k, 7), [m, k]);
  const W = Tensor.from(randomArray(n * k, 8), [n, k]);
  const NW = Tensor.from(randomArray(n, 9, 0.5, 1.5), [n]);
  X.requiresGrad = W.requiresGrad = true;
  const [y, normed] = linearNorm(X, W, null, NW, { eps: EPS, splits: 2 });
  assert.ok(y.requiresGrad && normed.requiresGrad);
  backward(sum(normed));
  const gx = await X.grad!.toArray();
  assert.ok(gx.some((v) => v !== 0) && W.grad !== null, "gradients reach x and the weight");
});

gpuTest("linearNorm names what does not fit", () => {
  const X = Tensor.from(randomArray(8, 1), [2, 4]), W = Tensor.from(randomArray(12, 2), [3, 4]);
  assert.throws(
    () => linearNorm(X, W, null, Tensor.from([1, 1], [2]), { splits: 2 }),
    /linearNorm: the norm weight must be f32 \[3\].*got \[2\] f32 beside weight \[3, 4\]/,
  );
  const X5 = Tensor.from(randomArray(10, 1), [2, 5]);
  assert.throws(
    () => linearNorm(X5, W, null, Tensor.from([1, 1, 1], [3]), { splits: 2 }),
    /linear: x must end in in=4/,
  );
});
