import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { linear as linearRef } from "../ref/matmul.ts";
import { rmsNormRef } from "../ref/rmsnorm.ts";
import { Tensor } from "../tensor.ts";
import { linearNorm, sumSplitsNorm } from "./linear_norm.ts";
import { gemmSkinny, type SkinnyConfig, sumSplits } from "./matmul_skinny.ts";
import { rmsNorm } from "./rmsnorm.ts";
import { sum } from "./reduce.ts";

// Small tiles: the production ones take tens of seconds to compile on a CPU adapter.
const TILE: SkinnyConfig = { wgX: 4, wgY: 4, tn: 4, tm: 1, bk: 16 };
const EPS = 1e-5;

gpuTest("sumSplitsNorm equals sumSplits then rmsNorm, bit for bit", async () => {
  // cols below, at and past a row workgroup; splits 1 to 6 (one round of four plus a rest)
  const cases = [[1, 100, 1], [3, 256, 2], [5, 1000, 6], [64, 96, 4]];
  for (const [rows, cols, splits] of cases) {
    for (const [bias, resid] of [[false, false], [true, false], [false, true], [true, true]]) {
      const seed = rows * 31 + cols + splits;
      const part = Tensor.from(randomArray(splits * rows * cols, seed), [splits, rows, cols]);
      const b = bias ? Tensor.from(randomArray(cols, seed + 1), [cols]) : null;
      const r = resid ? Tensor.from(randomArray(rows * cols, seed + 2), [rows, cols]) : null;
      const w = Tensor.from(randomArray(cols, seed + 3, 0.5, 1.5), [cols]);
      const y = Tensor.empty([rows, cols]), normed = Tensor.empty([rows, cols]);
      sumSplitsNorm(part, { y, normed }, {
        rows,
        cols,
        splits,
        eps: EPS,
        bias: b,
        residual: r,
        normWeight: w,
      });
      const y2 = Tensor.empty([rows, cols]);
      sumSplits(part, y2, { m: rows, n: cols, splits, bias: b, residual: r });
      const label = JSON.stringify({ rows, cols, splits, bias, resid });
      assert.deepEqual(await y.toArray(), await y2.toArray(), `y ${label}`);
      const n2 = rmsNorm(y2, w, { eps: EPS });
      assert.deepEqual(await normed.toArray(), await n2.toArray(), `normed ${label}`);
    }
  }
});

gpuTest("linearNorm: the skinny product and its norm, against the reference", async () => {
  const [m, n, k] = [6, 40, 48];
  const x = randomArray(m * k, 1), wt = randomArray(n * k, 2), bias = randomArray(n, 3);
  const h = randomArray(m * n, 4), nw = randomArray(n, 5, 0.5, 1.5);
  const X = Tensor.from(x, [2, 3, k]), W = Tensor.from(wt, [n, k]), B = Tensor.from(bias, [n]);
  const H = Tensor.from(h, [2, 3, n]), NW = Tensor.from(nw, [n]);
  const want = linearRef(x, wt, bias, m, k, n).map((v, i) => v + h[i]);
  const wantNorm = rmsNormRef(want, nw, EPS).y;
  for (const splits of [1, 3]) {
    const [y, normed] = linearNorm(X, W, B, NW, { residual: H, eps: EPS, config: TILE, splits });
    assert.deepEqual(y.shape, [2, 3, n]);
    assert.deepEqual(normed.shape, [2, 3, n]);
    assertClose(await y.toArray(), want, { atol: 1e-4, label: `y splits=${splits}` });
    assertClose(await normed.toArray(), wantNorm, { atol: 1e-4, label: `normed ${splits}` });
    // the same product unfused: the skinny kernel, its split sum, then rmsNorm
    const y2 = Tensor.empty([m, n]);
    gemmSkinny(X, W, y2, { m, n, k }, { bias: B, residual: H, config: TILE, splits });
    assert.deepEqual(await y.toArray(), await y2.toArray(), `bit for bit, splits=${splits}`);
    const n2 = await rmsNorm(y2, NW, { eps: EPS }).toArray();
    assert.deepEqual(await normed.toArray(), n2, `normed bit for bit, splits=${splits}`);
  }
});

gpuTest("linearNorm under the tape is linear then rmsNorm, with their gradients", async () => {
  const [m, n, k] = [3, 8, 12];
  const X = Tensor.from(randomArray(m * k, 7), [m, k]);
  const W = Tensor.from(randomArray(n * k, 8), [n, k]);
  const NW = Tensor.from(randomArray(n, 9, 0.5, 1.5), [n]);
  X.requiresGrad = W.requiresGrad = true;
  const [y, normed] = linearNorm(X, W, null, NW, { eps: EPS });
  assert.ok(y.requiresGrad && normed.requiresGrad);
  backward(sum(normed));
  const gx = await X.grad!.toArray();
  assert.ok(gx.some((v) => v !== 0) && W.grad !== null, "gradients reach x and the weight");
});

gpuTest("linearNorm rejects a norm weight that does not fit, naming the shapes", () => {
  const X = Tensor.from(randomArray(8, 1), [2, 4]), W = Tensor.from(randomArray(12, 2), [3, 4]);
  assert.throws(
    () => linearNorm(X, W, null, Tensor.from([1, 1], [2]), { config: TILE, splits: 2 }),
    /linearNorm: .*norm weight be f32 \[3\].*norm weight \[2\]/,
  );
});
