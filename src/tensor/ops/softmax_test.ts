import assert from "node:assert/strict";
import { assertClose, finiteDiff, gpuTest, randomArray } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { Tensor } from "../tensor.ts";
import { logSoftmax, softmax } from "./softmax.ts";
import { softmaxGradRef, softmaxRef } from "../ref/softmax.ts";

const size = (s: readonly number[]) => s.reduce((p, d) => p * d, 1);
const dot = (a: ArrayLike<number>, w: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * w[i];
  return s;
};
const OPS = { softmax, logSoftmax };

const SHAPES = [[1, 1], [5], [3, 7], [2, 3, 300], [2, 5003]];

gpuTest("softmax and logSoftmax match the reference, forward and backward", async () => {
  let seed = 1;
  for (const shape of SHAPES) {
    const cols = shape[shape.length - 1];
    for (const name of ["softmax", "logSoftmax"] as const) {
      const log = name === "logSoftmax";
      const x = randomArray(size(shape), seed++, -4, 4);
      const w = randomArray(x.length, seed++);
      const tx = Tensor.from(x, shape);
      tx.requiresGrad = true;
      const y = OPS[name](tx);
      const label = `${name} [${shape}]`;
      const ref = softmaxRef(x, cols, log);
      assertClose(await y.toArray(), ref, { label, atol: 1e-6 });
      backward(y, Tensor.from(w, shape));
      // Finite differences where cheap, the reference backward on the long rows.
      const expected = x.length > 100
        ? softmaxGradRef(ref, w, cols, log)
        : finiteDiff((v) => dot(softmaxRef(v, cols, log), w), x);
      assertClose(await tx.grad!.toArray(), expected, { label: `d${label}`, atol: 1e-4 });
    }
  }
});

gpuTest("softmax is stable for huge logits and ignores -inf entries", async () => {
  const x = [1000, 999, -1000, 0, -Infinity, 1];
  const y = await softmax(Tensor.from(x, [2, 3])).toArray();
  assertClose(y, softmaxRef(x, 3));
  assert.equal(y[4], 0);
  const l = await logSoftmax(Tensor.from(x.slice(0, 3), [1, 3])).toArray();
  assertClose(l, softmaxRef(x.slice(0, 3), 3, true), { atol: 1e-4 });
});

gpuTest("softmax rejects scalars and non-f32 inputs, naming shape and dtype", () => {
  assert.throws(
    () => softmax(Tensor.from([1], [])),
    /softmax: expected an f32 tensor .* got \[\] f32/,
  );
  const i = Tensor.from(new Int32Array(6), [2, 3], "i32");
  assert.throws(() => logSoftmax(i), /logSoftmax: expected an f32 tensor .* got \[2, 3\] i32/);
});
