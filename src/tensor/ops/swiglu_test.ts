import assert from "node:assert/strict";
import { assertClose, finiteDiff, gpuTest, randomArray } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { Tensor } from "../tensor.ts";
import { swigluBackwardRef, swigluRef } from "../ref/swiglu.ts";
import { swiglu } from "./swiglu.ts";

const SHAPES: number[][] = [[1], [3, 7, 11], [2, 300], [257]];

gpuTest("swiglu forward matches the reference, large |gate| included", async () => {
  for (const [i, shape] of SHAPES.entries()) {
    const n = shape.reduce((a, b) => a * b, 1);
    const gs = randomArray(n, 100 + i, -6, 6);
    const us = randomArray(n, 200 + i, -2, 2);
    const y = await swiglu(Tensor.from(gs, shape), Tensor.from(us, shape)).toArray();
    assertClose(y, swigluRef(gs, us), { atol: 1e-6, rtol: 1e-5, label: `out ${shape}` });
  }
  const big = Float32Array.from([-200, -100, -30, 0, 30, 100, 200]);
  const y = await swiglu(Tensor.from(big, [7]), Tensor.from(new Float32Array(7).fill(1), [7]))
    .toArray();
  assert.ok(y.every(Number.isFinite), `finite for large |gate|: ${y}`);
  assertClose(y, swigluRef(big, new Float32Array(7).fill(1)), { atol: 1e-6, rtol: 1e-6 });
});

gpuTest("swiglu backward matches the reference for gate and up", async () => {
  for (const [i, shape] of SHAPES.entries()) {
    const n = shape.reduce((a, b) => a * b, 1);
    const gs = randomArray(n, 300 + i, -6, 6);
    const us = randomArray(n, 400 + i, -2, 2);
    const ds = randomArray(n, 500 + i);
    const gate = Tensor.from(gs, shape), up = Tensor.from(us, shape);
    gate.requiresGrad = true;
    up.requiresGrad = true;
    backward(swiglu(gate, up), Tensor.from(ds, shape));
    const ref = swigluBackwardRef(gs, us, ds);
    assertClose(await gate.grad!.toArray(), ref.dGate, { atol: 1e-6, rtol: 1e-5 });
    assertClose(await up.grad!.toArray(), ref.dUp, { atol: 1e-6, rtol: 1e-5 });
  }
});

gpuTest("swiglu backward reference agrees with finite differences", () => {
  const n = 13;
  const gs = randomArray(n, 600, -4, 4), us = randomArray(n, 601), ds = randomArray(n, 602);
  const ref = swigluBackwardRef(gs, us, ds);
  const loss = (g: Float32Array, u: Float32Array) =>
    swigluRef(g, u).reduce((a, v, i) => a + v * ds[i], 0);
  const fg = finiteDiff((v) => loss(Float32Array.from(v), us), gs);
  const fu = finiteDiff((v) => loss(gs, Float32Array.from(v)), us);
  assertClose(ref.dGate, fg, { atol: 1e-3, rtol: 1e-3, label: "d_gate" });
  assertClose(ref.dUp, fu, { atol: 1e-3, rtol: 1e-3, label: "d_up" });
});

gpuTest("swiglu gives a gradient only to inputs that need one", async () => {
  const gate = Tensor.from([1, -2, 3], [3]), up = Tensor.from([0.5, 0.5, 2], [3]);
  up.requiresGrad = true;
  backward(swiglu(gate, up), Tensor.from([1, 1, 1], [3]));
  assert.equal(gate.grad, null);
  assertClose(
    await up.grad!.toArray(),
    swigluRef(Float32Array.from([1, -2, 3]), new Float32Array(3).fill(1)),
  );
});

gpuTest("swiglu rejects mismatched shapes and dtypes, naming them", () => {
  assert.throws(
    () => swiglu(Tensor.empty([2, 3]), Tensor.empty([3, 2])),
    /swiglu: gate and up must have the same shape, got gate \[2, 3\] f32, up \[3, 2\] f32/,
  );
  assert.throws(
    () => swiglu(Tensor.empty([4]), Tensor.empty([4], "i32")),
    /swiglu: expected f32 .*up \[4\] i32/,
  );
});
