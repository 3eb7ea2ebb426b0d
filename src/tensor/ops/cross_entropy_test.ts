import assert from "node:assert/strict";
import { assertClose, finiteDiff, gpuTest, randomArray, rng } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { Tensor } from "../tensor.ts";
import { crossEntropy, type CrossEntropyOptions } from "./cross_entropy.ts";
import { crossEntropyGradRef, crossEntropyRef } from "../ref/cross_entropy.ts";

const dot = (a: ArrayLike<number>, w: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * w[i];
  return s;
};

function randomTargets(n: number, v: number, seed: number, ignore = -100): Int32Array {
  const r = rng(seed);
  // About one row in four is ignored.
  return Int32Array.from({ length: n }, () => r() < 0.25 ? ignore : Math.floor(r() * v));
}

const CASES: [number, number, CrossEntropyOptions][] = [
  [5, 7, {}],
  [5, 7, { reduction: "sum" }],
  [5, 7, { reduction: "none" }],
  [6, 9, { ignoreIndex: 3, reduction: "mean" }], // ignoreIndex inside [0, V)
  [1, 1, {}],
  [3, 5003, {}], // long rows
  [3, 5003, { reduction: "none" }],
];

gpuTest("crossEntropy matches the reference, forward and backward", async () => {
  let seed = 1;
  for (const [n, v, opts] of CASES) {
    const x = randomArray(n * v, seed++, -5, 5);
    const t = randomTargets(n, v, seed++, opts.ignoreIndex);
    const label = `crossEntropy N=${n} V=${v} ${JSON.stringify(opts)}`;
    const ref = crossEntropyRef(x, t, v, opts);
    const w = opts.reduction === "none" ? randomArray(n, seed++) : Float32Array.of(0.7);
    // Once with the targets on the GPU, once from a CPU array.
    for (const targets of [Tensor.from(t, [n], "i32"), t]) {
      const logits = Tensor.from(x, [n, v]);
      logits.requiresGrad = true;
      const loss = crossEntropy(logits, targets, opts);
      assert.deepEqual(loss.shape, opts.reduction === "none" ? [n] : [], label);
      assertClose(await loss.toArray(), ref, { label, atol: 1e-5 });
      backward(loss, Tensor.from(w, loss.shape));
      const expected = n * v > 100
        ? crossEntropyGradRef(x, t, v, w, opts)
        : finiteDiff((l) => dot(crossEntropyRef(l, t, v, opts), w), x);
      assertClose(await logits.grad!.toArray(), expected, { label: `d${label}`, atol: 1e-4 });
    }
  }
});

gpuTest("crossEntropy with every target ignored gives 0 and zero gradients", async () => {
  for (const reduction of ["mean", "sum", "none"] as const) {
    const logits = Tensor.from([1, 2, 3, -Infinity, -Infinity, -Infinity], [2, 3]);
    logits.requiresGrad = true;
    const loss = crossEntropy(logits, [-100, -100], { reduction });
    assertClose(await loss.toArray(), reduction === "none" ? [0, 0] : [0]);
    backward(loss, Tensor.from(reduction === "none" ? [1, 1] : [1], loss.shape));
    assertClose(await logits.grad!.toArray(), [0, 0, 0, 0, 0, 0], { label: reduction });
  }
});

gpuTest("crossEntropy is stable for huge logits", async () => {
  const x = [1000, -1000, 0, 0, 500, 501];
  const loss = crossEntropy(Tensor.from(x, [2, 3]), [1, 2], { reduction: "none" });
  assertClose(await loss.toArray(), crossEntropyRef(x, [1, 2], 3, { reduction: "none" }));
});

gpuTest("out-of-range GPU targets are clamped; CPU targets are checked", async () => {
  const x = randomArray(12, 5);
  const loss = crossEntropy(Tensor.from(x, [3, 4]), Tensor.from([9, -5, 2], [3], "i32"), {
    reduction: "none",
  });
  assertClose(await loss.toArray(), crossEntropyRef(x, [3, 0, 2], 4, { reduction: "none" }));
  assert.throws(
    () => crossEntropy(Tensor.from(x, [3, 4]), [1, 4, 0]),
    /crossEntropy: target 4 at row 1 is outside \[0, 4\) and not ignoreIndex \(-100\)/,
  );
});

gpuTest("crossEntropy rejects bad shapes and dtypes, naming them", () => {
  const logits = Tensor.from(new Float32Array(12), [3, 4]);
  const i = Tensor.from(new Int32Array(12), [3, 4], "i32");
  assert.throws(() => crossEntropy(i, [0, 1, 2]), /logits must be f32 \[N, V\], got \[3, 4\] i32/);
  assert.throws(
    () => crossEntropy(Tensor.from(new Float32Array(4), [4]), [0]),
    /logits must be f32 \[N, V\], got \[4\] f32/,
  );
  const tf = Tensor.from([0, 1, 2], [3]);
  assert.throws(() => crossEntropy(logits, tf), /targets must be i32 \[3\], got \[3\] f32/);
  const t2 = Tensor.from([0, 1], [2], "i32");
  assert.throws(() => crossEntropy(logits, t2), /targets must be i32 \[3\], got \[2\] i32/);
  assert.throws(() => crossEntropy(logits, [0, 1]), /2 targets for 3 rows/);
});
