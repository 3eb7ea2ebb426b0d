import assert from "node:assert/strict";
import { assertClose, finiteDiff, gpuTest, randomArray } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { Tensor } from "../tensor.ts";
import { rmsNormBackwardRef, rmsNormRef } from "../ref/rmsnorm.ts";
import { rmsNorm } from "./rmsnorm.ts";

// Odd sizes on purpose: C below, above and not a multiple of the 256-wide workgroup; rows above
// the 32-row chunk of the weight-gradient reduction.
const SHAPES: number[][] = [[1, 1], [3, 5, 37], [2, 300], [71, 9]];

gpuTest("rmsNorm forward matches the reference", async () => {
  for (const [i, shape] of SHAPES.entries()) {
    const C = shape.at(-1)!;
    const n = shape.reduce((a, b) => a * b, 1);
    const xs = randomArray(n, 10 + i, -2, 2);
    const ws = randomArray(C, 20 + i, 0.5, 1.5);
    const y = rmsNorm(Tensor.from(xs, shape), Tensor.from(ws, [C]), { eps: 1e-5 });
    assert.deepEqual(y.shape, shape);
    assertClose(await y.toArray(), rmsNormRef(xs, ws, 1e-5).y, { label: `y ${shape}` });
  }
});

gpuTest("rmsNorm backward matches the reference for x and weight", async () => {
  for (const [i, shape] of SHAPES.entries()) {
    const C = shape.at(-1)!;
    const n = shape.reduce((a, b) => a * b, 1);
    const xs = randomArray(n, 30 + i, -2, 2);
    const ws = randomArray(C, 40 + i, 0.5, 1.5);
    const gs = randomArray(n, 50 + i);
    const x = Tensor.from(xs, shape);
    const w = Tensor.from(ws, [C]);
    x.requiresGrad = true;
    w.requiresGrad = true;
    backward(rmsNorm(x, w, { eps: 1e-6 }), Tensor.from(gs, shape));
    const ref = rmsNormBackwardRef(xs, ws, gs, 1e-6);
    assertClose(await x.grad!.toArray(), ref.gx, { atol: 1e-5, rtol: 1e-4, label: `gx ${shape}` });
    assertClose(await w.grad!.toArray(), ref.gw, { atol: 1e-4, rtol: 1e-4, label: `gw ${shape}` });
  }
});

gpuTest("rmsNorm backward reference agrees with finite differences", () => {
  const R = 3, C = 7, eps = 1e-6;
  const xs = randomArray(R * C, 60, -2, 2);
  const ws = randomArray(C, 61, 0.5, 1.5);
  const gs = randomArray(R * C, 62);
  const ref = rmsNormBackwardRef(xs, ws, gs, eps);
  const loss = (xv: Float32Array, wv: Float32Array) => {
    const { y } = rmsNormRef(xv, wv, eps);
    return y.reduce((a, v, i) => a + v * gs[i], 0);
  };
  const fx = finiteDiff((v) => loss(Float32Array.from(v), ws), xs);
  const fw = finiteDiff((v) => loss(xs, Float32Array.from(v)), ws);
  assertClose(ref.gx, fx, { atol: 2e-3, rtol: 2e-3, label: "gx vs finite differences" });
  assertClose(ref.gw, fw, { atol: 2e-3, rtol: 2e-3, label: "gw vs finite differences" });
});

gpuTest("rmsNorm only computes the gradients that are needed", async () => {
  const xs = randomArray(4 * 6, 70);
  const ws = randomArray(6, 71, 0.5, 1.5);
  const x = Tensor.from(xs, [4, 6]);
  const w = Tensor.from(ws, [6]);
  w.requiresGrad = true;
  backward(rmsNorm(x, w), Tensor.from(new Float32Array(24).fill(1), [4, 6]));
  assert.equal(x.grad, null);
  const ref = rmsNormBackwardRef(xs, ws, new Float32Array(24).fill(1), 1e-6);
  assertClose(await w.grad!.toArray(), ref.gw, { atol: 1e-5 });
});

gpuTest("rmsNorm rejects mismatched shapes and dtypes, naming them", () => {
  const x = Tensor.empty([2, 8]);
  assert.throws(
    () => rmsNorm(x, Tensor.empty([7])),
    /rmsNorm: .*x \[2, 8\] f32, weight \[7\] f32/,
  );
  assert.throws(
    () => rmsNorm(x, Tensor.empty([8], "i32")),
    /rmsNorm: expected f32 .*weight \[8\] i32/,
  );
  assert.throws(() => rmsNorm(Tensor.empty([2, 8], "u32"), Tensor.empty([8])), /x \[2, 8\] u32/);
});
