import assert from "node:assert/strict";
import { gpu } from "../../gpu/mod.ts";
import { assertClose, finiteDiff, gpuTest, randomArray } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import * as ref from "../ref/matmul.ts";
import { Tensor } from "../tensor.ts";
import { add } from "./elementwise.ts";
import { linear } from "./matmul.ts";
import { gemmNew, type TileName } from "./matmul_kernel.ts";
import { gemmSkinny, type SkinnyConfig, skinnyConfig } from "./matmul_skinny.ts";

const TOL = { atol: 1e-4, rtol: 1e-4 };

/** x [M, K], w [N, K], bias [N], residual [M, N] as arrays and tensors. */
function operands(m: number, n: number, k: number, seed: number) {
  const x = randomArray(m * k, seed), w = randomArray(n * k, seed + 1);
  const b = randomArray(n, seed + 2), r = randomArray(m * n, seed + 3);
  return {
    x,
    w,
    b,
    r,
    X: Tensor.from(x, [m, k]),
    W: Tensor.from(w, [n, k]),
    B: Tensor.from(b, [n]),
    R: Tensor.from(r, [m, n]),
  };
}

gpuTest("tiled GEMM adds the residual in its epilogue (bias or not, split K or not)", async () => {
  // [m, n, k, splits, tile]: odd sizes across block edges; split K sums the residual once.
  const cases: [number, number, number, number, TileName][] = [
    [37, 35, 11, 1, "small"],
    [9, 7, 83, 3, "small"],
    [4, 6, 9, 7, "small"],
    // 8x8 per thread: the epilogue's second row and column groups (RG, CG > 1)
    [67, 70, 13, 2, "medium"],
  ];
  let seed = 50;
  for (const [m, n, k, splits, tile] of cases) {
    const o = operands(m, n, k, seed += 4);
    const d = { batch: 1, m, n, k, transA: false, transB: true, strideA: 0, strideB: 0 };
    for (const withBias of [false, true]) {
      const bias = withBias ? o.B : null;
      const label = JSON.stringify({ m, n, k, splits, withBias });
      const Y = gemmNew(o.X, o.W, [m, n], d, { tile, splits, bias, residual: o.R });
      const want = ref.linear(o.x, o.w, withBias ? o.b : null, m, k, n, o.r);
      assertClose(await Y.toArray(), want, { ...TOL, label });
      // Bit for bit the unfused composition residual + (x W^T + b).
      const plain = gemmNew(o.X, o.W, [m, n], d, { tile, splits, bias });
      assert.deepEqual(await Y.toArray(), await add(o.R, plain).toArray(), label);
    }
  }
});

gpuTest("tiled GEMM with a residual under every transpose", async () => {
  const [m, n, k] = [19, 13, 10];
  const a = randomArray(m * k, 70), b = randomArray(k * n, 71), r = randomArray(m * n, 72);
  for (const [transA, transB] of [[false, false], [true, false], [true, true]]) {
    const A = Tensor.from(a, transA ? [k, m] : [m, k]),
      B = Tensor.from(b, transB ? [n, k] : [k, n]);
    const d = { batch: 1, m, n, k, transA, transB, strideA: 0, strideB: 0 };
    const Y = gemmNew(A, B, [m, n], d, { tile: "small", residual: Tensor.from(r, [m, n]) });
    const want = ref.matmul(a, b, d).map((v, i) => v + r[i]);
    assertClose(await Y.toArray(), want, { ...TOL, label: JSON.stringify({ transA, transB }) });
  }
});

// Small skinny tiles on the CPU adapter (the production ones compile for a minute there).
const CPU_TILE: SkinnyConfig = { wgX: 2, wgY: 4, tn: 8, tm: 4, bk: 4 };

gpuTest("skinny GEMM adds the residual, with one split and with split K", async () => {
  const cases = [[3, 37, 36, 1], [17, 130, 100, 3], [2, 7, 8, 4]];
  let seed = 80;
  for (const [m, n, k, splits] of cases) {
    const o = operands(m, n, k, seed += 4);
    const config = gpu().isCpuAdapter ? CPU_TILE : skinnyConfig(m);
    for (const withBias of [false, true]) {
      const bias = withBias ? o.B : null;
      const label = JSON.stringify({ m, n, k, splits, withBias });
      const Y = Tensor.empty([m, n]), plain = Tensor.empty([m, n]);
      gemmSkinny(o.X, o.W, Y, { m, n, k }, { bias, residual: o.R, splits, config });
      gemmSkinny(o.X, o.W, plain, { m, n, k }, { bias, splits, config });
      const want = ref.linear(o.x, o.w, withBias ? o.b : null, m, k, n, o.r);
      assertClose(await Y.toArray(), want, { ...TOL, label });
      assert.deepEqual(await Y.toArray(), await add(o.R, plain).toArray(), label);
    }
  }
});

gpuTest("linear with a residual: gradients match finite differences of the reference", async () => {
  const [rows, inF, outF] = [5, 6, 7];
  const o = operands(rows, outF, inF, 90);
  const g = randomArray(rows * outF, 95);
  const X = Tensor.from(o.x, [1, rows, inF]), R = Tensor.from(o.r, [1, rows, outF]);
  for (const t of [X, o.W, o.B, R]) t.requiresGrad = true;
  const Y = linear(X, o.W, o.B, { residual: R });
  assert.deepEqual(Y.shape, [1, rows, outF]);
  backward(Y, Tensor.from(g, Y.shape));
  const loss = (
    x: ArrayLike<number>,
    w: ArrayLike<number>,
    b: ArrayLike<number>,
    r: ArrayLike<number>,
  ) => ref.linear(x, w, b, rows, inF, outF, r).reduce((s, v, i) => s + v * g[i], 0);
  const tol = { atol: 2e-3, rtol: 2e-3 };
  const fd = {
    x: finiteDiff((x) => loss(x, o.w, o.b, o.r), o.x),
    w: finiteDiff((w) => loss(o.x, w, o.b, o.r), o.w),
    b: finiteDiff((b) => loss(o.x, o.w, b, o.r), o.b),
    r: finiteDiff((r) => loss(o.x, o.w, o.b, r), o.r),
  };
  assertClose(await X.grad!.toArray(), fd.x, { ...tol, label: "dx" });
  assertClose(await o.W.grad!.toArray(), fd.w, { ...tol, label: "dW" });
  assertClose(await o.B.grad!.toArray(), fd.b, { ...tol, label: "db" });
  assertClose(await R.grad!.toArray(), fd.r, { ...tol, label: "d residual" });
  assert.deepEqual(await R.grad!.toArray(), Float32Array.from(g), "d residual is g itself");
});

gpuTest("linear with its own input as the residual sums both gradients", async () => {
  const n = 6;
  const o = operands(3, n, n, 100);
  const X = Tensor.from(o.x, [3, n]);
  X.requiresGrad = true;
  const g = randomArray(3 * n, 105);
  backward(linear(X, o.W, null, { residual: X }), Tensor.from(g, [3, n]));
  const { da } = ref.matmulBackward(o.x, o.w, g, { batch: 1, m: 3, n, k: n, transB: true });
  assertClose(await X.grad!.toArray(), da.map((v, i) => v + g[i]), TOL);
});

gpuTest("a fused residual saves the add's dispatch", () => {
  const o = operands(4, 8, 8, 110);
  const rec = gpu().recorder;
  let at = rec.dispatches;
  add(o.R, linear(o.X, o.W, o.B));
  const unfused = rec.dispatches - at;
  at = rec.dispatches;
  linear(o.X, o.W, o.B, { residual: o.R });
  assert.equal(rec.dispatches - at, unfused - 1);
});

gpuTest("a bad residual is rejected naming its shape and dtype", () => {
  const o = operands(2, 4, 3, 120);
  assert.throws(
    () => linear(o.X, o.W, null, { residual: Tensor.from(randomArray(8, 1), [4, 2]) }),
    /linear: residual must be f32 \[2, 4\]: .*residual \[4, 2\] f32/,
  );
  assert.throws(
    () => linear(o.X, o.W, null, { residual: Tensor.from(new Int32Array(8), [2, 4], "i32") }),
    /residual must be f32 \[2, 4\].*residual \[2, 4\] i32/,
  );
});
