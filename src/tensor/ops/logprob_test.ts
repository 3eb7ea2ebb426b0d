import assert from "node:assert/strict";
import { assertClose, finiteDiff, gpuTest, randomArray, rng } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { Tensor } from "../tensor.ts";
import { logprobEntropyBackwardRef, logprobEntropyRef, logSoftmaxRef } from "../ref/logprob.ts";
import { logprobEntropy } from "./logprob.ts";
import { logSoftmaxRows, unfusedLogProbs } from "./logprob_unfused.ts";

// V below, at and above the 256-wide workgroup and not a multiple of it; a [B, T, V] case.
const SHAPES: number[][] = [[1, 1], [3, 5], [4, 256], [5, 300], [2, 3, 257], [2, 1031]];

function targetsFor(N: number, V: number, seed: number): Int32Array {
  const r = rng(seed);
  // about a quarter ignored, one of them in the middle of the batch
  return Int32Array.from(
    { length: N },
    (_, i) => (i === Math.floor(N / 2) && N > 2) || r() < 0.25 ? -100 : Math.floor(r() * V),
  );
}

gpuTest("logprobEntropy forward matches the reference (temperature, ignored targets)", async () => {
  for (const [i, shape] of SHAPES.entries()) {
    const V = shape.at(-1)!, N = shape.reduce((a, b) => a * b, 1) / V;
    const xs = randomArray(N * V, 100 + i, -4, 4);
    const ts = targetsFor(N, V, 200 + i);
    for (const temperature of [1, 0.7]) {
      const out = logprobEntropy(Tensor.from(xs, shape), Tensor.from(ts, [N], "i32"), {
        temperature,
        withEntropy: true,
      });
      const ref = logprobEntropyRef(xs, ts, { temperature });
      const label = `${shape} T=${temperature}`;
      assertClose(await out.logProbs.toArray(), ref.logProbs, { atol: 2e-5, label: `lp ${label}` });
      assertClose(await out.entropy!.toArray(), ref.entropy, { atol: 2e-5, label: `H ${label}` });
      const lpOnly = logprobEntropy(Tensor.from(xs, shape), Tensor.from(ts, [N], "i32"), {
        temperature,
      });
      assert.equal(lpOnly.entropy, null);
      assertClose(await lpOnly.logProbs.toArray(), ref.logProbs, { atol: 2e-5, label });
    }
  }
});

gpuTest("logprobEntropy stays exact on large, peaked logits", async () => {
  const N = 3, V = 700;
  const xs = randomArray(N * V, 7, -2, 2);
  for (let n = 0; n < N; n++) xs[n * V + 11 * n + 5] = 40 + n; // near one-hot rows
  for (let v = 0; v < V; v++) xs[2 * V + v] += 1000; // a large common offset
  const ts = Int32Array.from([5, 3, 27]);
  const out = logprobEntropy(Tensor.from(xs, [N, V]), Tensor.from(ts, [N], "i32"), {
    withEntropy: true,
  });
  const ref = logprobEntropyRef(xs, ts);
  assertClose(await out.logProbs.toArray(), ref.logProbs, { atol: 1e-4, rtol: 1e-5 });
  assertClose(await out.entropy!.toArray(), ref.entropy, { atol: 1e-6, rtol: 1e-3 });
});

gpuTest("logprobEntropy backward takes both gradients in one node", async () => {
  for (const [i, shape] of SHAPES.entries()) {
    const V = shape.at(-1)!, N = shape.reduce((a, b) => a * b, 1) / V;
    const xs = randomArray(N * V, 300 + i, -3, 3);
    const ts = targetsFor(N, V, 400 + i);
    const gLp = randomArray(N, 500 + i), gEnt = randomArray(N, 600 + i);
    const temperature = i % 2 ? 0.6 : 1;
    const x = Tensor.from(xs, shape);
    x.requiresGrad = true;
    const out = logprobEntropy(x, Tensor.from(ts, [N], "i32"), { temperature, withEntropy: true });
    backward([out.logProbs, out.entropy!], [Tensor.from(gLp, [N]), Tensor.from(gEnt, [N])]);
    const ref = logprobEntropyBackwardRef(xs, ts, gLp, gEnt, { temperature });
    assertClose(await x.grad!.toArray(), ref, { atol: 2e-5, label: `dlogits ${shape}` });

    // only the log-prob seeded (entropy off, and entropy on but unused)
    for (const withEntropy of [false, true]) {
      const y = Tensor.from(xs, shape);
      y.requiresGrad = true;
      const o = logprobEntropy(y, Tensor.from(ts, [N], "i32"), { temperature, withEntropy });
      backward(o.logProbs, Tensor.from(gLp, [N]));
      const r = logprobEntropyBackwardRef(xs, ts, gLp, null, { temperature });
      assertClose(await y.grad!.toArray(), r, { atol: 2e-5, label: `lp-only ${shape}` });
    }
  }
});

gpuTest("logprob backward reference agrees with finite differences", () => {
  const N = 3, V = 6, temperature = 0.8;
  const xs = randomArray(N * V, 700, -2, 2);
  const ts = Int32Array.from([4, -100, 0]);
  const gLp = randomArray(N, 701), gEnt = randomArray(N, 702);
  const loss = (x: Float64Array) => {
    const r = logprobEntropyRef(x, ts, { temperature });
    let s = 0;
    for (let n = 0; n < N; n++) s += gLp[n] * r.logProbs[n] + gEnt[n] * r.entropy[n];
    return s;
  };
  const fd = finiteDiff(loss, xs, 1e-4);
  const ref = logprobEntropyBackwardRef(xs, ts, gLp, gEnt, { temperature });
  assertClose(ref, fd, { atol: 1e-6, rtol: 1e-5, label: "dlogits vs finite differences" });
});

gpuTest("logprobEntropy: backward over both seeded outputs, end to end", async () => {
  const B = 2, T = 3, V = 37, N = B * T;
  const xs = randomArray(N * V, 800, -3, 3);
  const ts = Int32Array.from([-100, 3, 36, -100, 0, 12]);
  const gLp = randomArray(N, 801), gEnt = randomArray(N, 802);
  const x = Tensor.from(xs, [B, T, V]);
  x.requiresGrad = true;
  const out = logprobEntropy(x, Tensor.from(ts, [N], "i32"), { withEntropy: true, temperature: 2 });
  const ref = logprobEntropyRef(xs, ts, { temperature: 2 });
  assertClose(await out.logProbs.toArray(), ref.logProbs, { atol: 2e-5 });
  assertClose(await out.entropy!.toArray(), ref.entropy, { atol: 2e-5 });
  backward([out.logProbs, out.entropy!], [Tensor.from(gLp, [N]), Tensor.from(gEnt, [N])]);
  const dref = logprobEntropyBackwardRef(xs, ts, gLp, gEnt, { temperature: 2 });
  assertClose(await x.grad!.toArray(), dref, { atol: 2e-5, label: "dlogits" });
  assert.deepEqual(x.grad!.shape, [B, T, V]);
});

gpuTest("unfused baseline (log-softmax + gather + entropy) matches the reference", async () => {
  const N = 4, V = 300;
  const xs = randomArray(N * V, 900, -4, 4);
  const ts = Int32Array.from([0, -100, 299, 17]);
  const lsm = logSoftmaxRows(Tensor.from(xs, [N, V]), { temperature: 0.5 });
  assertClose(await lsm.toArray(), logSoftmaxRef(xs, V, 0.5), { atol: 2e-5 });
  const out = unfusedLogProbs(Tensor.from(xs, [N, V]), Tensor.from(ts, [N], "i32"), {
    temperature: 0.5,
    withEntropy: true,
  });
  const ref = logprobEntropyRef(xs, ts, { temperature: 0.5 });
  assertClose(await out.logProbs.toArray(), ref.logProbs, { atol: 2e-5 });
  assertClose(await out.entropy!.toArray(), ref.entropy, { atol: 2e-5 });
});

gpuTest("logprobEntropy rejects bad shapes and dtypes, naming them", () => {
  const x = Tensor.empty([4, 10]);
  assert.throws(
    () => logprobEntropy(x, Tensor.empty([3], "i32")),
    /logprobEntropy: .*logits \[4, 10\] f32, targets \[3\] i32/,
  );
  assert.throws(
    () => logprobEntropy(x, Tensor.empty([4], "f32")),
    /logprobEntropy: expected f32 logits and i32 targets.*targets \[4\] f32/,
  );
  assert.throws(
    () => logprobEntropy(Tensor.empty([4, 10], "i32"), Tensor.empty([4], "i32")),
    /logits \[4, 10\] i32/,
  );
  assert.throws(
    () => logprobEntropy(Tensor.empty([40]), Tensor.empty([4], "i32")),
    /\[N, V\] or \[B, T, V\].*logits \[40\] f32/,
  );
  assert.throws(() => logprobEntropy(x, Tensor.empty([4], "i32"), { temperature: 0 }), /> 0/);
  assert.throws(
    () => unfusedLogProbs(x, Tensor.empty([5], "i32")),
    /unfusedLogProbs: .*logits \[4, 10\] f32, targets \[5\] i32/,
  );
});
