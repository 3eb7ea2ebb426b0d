import assert from "node:assert/strict";
import { assertClose, finiteDiff, gpuTest, randomArray, rng } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { gpu } from "../../gpu/mod.ts";
import { Tensor } from "../tensor.ts";
import { ropeInvFreqRef, ropeQKRef } from "../ref/rope.ts";
import { rope, ropeDynamicInvFreq, ropeQK } from "./rope.ts";

type Shape4 = [number, number, number, number];

/** q [B, T, Hq, D] and k [B, T, Hkv, D] with random values, positions below maxPos. */
function inputs(
  B: number,
  T: number,
  heads: [number, number],
  D: number,
  seed: number,
  maxPos = 5000,
) {
  const shapes = { q: [B, T, heads[0], D] as Shape4, k: [B, T, heads[1], D] as Shape4 };
  const r = rng(seed);
  return {
    shapes,
    qs: randomArray(B * T * heads[0] * D, seed + 1),
    ks: randomArray(B * T * heads[1] * D, seed + 2),
    ps: Int32Array.from({ length: B * T }, () => Math.floor(r() * maxPos)),
  };
}

gpuTest("ropeQK matches the reference and rope itself bit for bit (GQA, odd shapes)", async () => {
  const cases: [number, number, [number, number], number][] = [
    [2, 3, [4, 2], 64],
    [1, 5, [3, 1], 10], // D = 2 * 5
    [3, 1, [7, 7], 6], // one decode step, Hq = Hkv
  ];
  for (const [i, [B, T, heads, D]] of cases.entries()) {
    const { shapes, qs, ks, ps } = inputs(B, T, heads, D, 10 * i);
    const pos = Tensor.from(ps, [B, T], "i32");
    const q = Tensor.from(qs, shapes.q), k = Tensor.from(ks, shapes.k);
    const [qr, kr] = ropeQK(q, k, pos, { theta: 1e6 });
    const [qe, ke] = ropeQKRef(qs, ks, ps, shapes, { theta: 1e6 });
    const label = `B${B} T${T} H${heads} D${D}`;
    assertClose(await qr.toArray(), qe, { atol: 5e-7, rtol: 0, label: `q ${label}` });
    assertClose(await kr.toArray(), ke, { atol: 5e-7, rtol: 0, label: `k ${label}` });
    assert.deepEqual(await qr.toArray(), await rope(q, pos, { theta: 1e6 }).toArray(), label);
    assert.deepEqual(await kr.toArray(), await rope(k, pos, { theta: 1e6 }).toArray(), label);
  }
});

gpuTest(
  "ropeQK backward: both gradients in one pass, vs the reference and finite differences",
  async () => {
    const { shapes, qs, ks, ps } = inputs(2, 3, [3, 1], 10, 40, 1000);
    const gqs = randomArray(qs.length, 41), gks = randomArray(ks.length, 42);
    const q = Tensor.from(qs, shapes.q), k = Tensor.from(ks, shapes.k);
    q.requiresGrad = k.requiresGrad = true;
    const pos = Tensor.from(ps, [2, 3], "i32");
    const seeds = [Tensor.from(gqs, shapes.q), Tensor.from(gks, shapes.k)];
    const d0 = gpu().recorder.dispatches;
    const [qr, kr] = ropeQK(q, k, pos, { theta: 1e4 });
    assert.equal(gpu().recorder.dispatches - d0, 1, "one forward dispatch for both");
    const d1 = gpu().recorder.dispatches;
    backward([qr, kr], seeds);
    assert.equal(gpu().recorder.dispatches - d1, 1, "one backward dispatch for both");
    const [gqe, gke] = ropeQKRef(gqs, gks, ps, shapes, { theta: 1e4, inverse: true });
    assertClose(await q.grad!.toArray(), gqe, { atol: 2e-6, rtol: 0, label: "grad q" });
    assertClose(await k.grad!.toArray(), gke, { atol: 2e-6, rtol: 0, label: "grad k" });
    // The reference backward is the gradient of sum(gq * rope(q)) + sum(gk * rope(k)).
    const loss = (qv: Float32Array, kv: Float32Array) => {
      const [a, b] = ropeQKRef(qv, kv, ps, shapes, { theta: 1e4 });
      return a.reduce((s, v, i) => s + v * gqs[i], 0) + b.reduce((s, v, i) => s + v * gks[i], 0);
    };
    const fdq = finiteDiff((v) => loss(Float32Array.from(v), ks), qs);
    const fdk = finiteDiff((v) => loss(qs, Float32Array.from(v)), ks);
    assertClose(gqe, fdq, { atol: 1e-3, rtol: 1e-3, label: "q vs finite differences" });
    assertClose(gke, fdk, { atol: 1e-3, rtol: 1e-3, label: "k vs finite differences" });
  },
);

gpuTest("ropeQK backward when only one output reaches the loss", async () => {
  const { shapes, qs, ks, ps } = inputs(1, 2, [2, 1], 8, 50, 300);
  const gks = randomArray(ks.length, 51);
  const q = Tensor.from(qs, shapes.q), k = Tensor.from(ks, shapes.k);
  q.requiresGrad = k.requiresGrad = true;
  const [, kr] = ropeQK(q, k, Tensor.from(ps, [1, 2], "i32"), { theta: 1e4 });
  backward(kr, Tensor.from(gks, shapes.k));
  assert.equal(q.grad, null, "q is not reached");
  const [, gke] = ropeQKRef(qs, gks, ps, shapes, { theta: 1e4, inverse: true });
  assertClose(await k.grad!.toArray(), gke, { atol: 2e-6, rtol: 0 });
});

gpuTest("ropeQK: dynamic inv_freq tensor, a given table and scale, as rope does", async () => {
  const { shapes, qs, ks, ps } = inputs(2, 2, [4, 2], 16, 60, 100);
  const pos = Tensor.from(ps, [2, 2], "i32");
  const dyn = ropeDynamicInvFreq(pos, {
    theta: 1e4,
    headDim: 16,
    factor: 4,
    maxPositionEmbeddings: 32,
  });
  const table = ropeInvFreqRef(500, 16);
  for (
    const opts of [{ theta: 0, invFreq: dyn, scale: 1.25 }, {
      theta: 0,
      invFreq: table,
      scale: 0.8,
    }]
  ) {
    const q = Tensor.from(qs, shapes.q), k = Tensor.from(ks, shapes.k);
    q.requiresGrad = k.requiresGrad = true;
    const [qr, kr] = ropeQK(q, k, pos, opts);
    const gq = randomArray(qs.length, 61), gk = randomArray(ks.length, 62);
    backward([qr, kr], [Tensor.from(gq, shapes.q), Tensor.from(gk, shapes.k)]);
    const q1 = Tensor.from(qs, shapes.q), k1 = Tensor.from(ks, shapes.k);
    q1.requiresGrad = k1.requiresGrad = true;
    const qr1 = rope(q1, pos, opts), kr1 = rope(k1, pos, opts);
    backward([qr1, kr1], [Tensor.from(gq, shapes.q), Tensor.from(gk, shapes.k)]);
    assert.deepEqual(await qr.toArray(), await qr1.toArray());
    assert.deepEqual(await kr.toArray(), await kr1.toArray());
    assert.deepEqual(await q.grad!.toArray(), await q1.grad!.toArray());
    assert.deepEqual(await k.grad!.toArray(), await k1.grad!.toArray());
  }
  assert.equal(dyn.disposed, false, "a caller's table stays the caller's");
  dyn.dispose();
});

gpuTest("ropeQK rejects a head dim mismatch and bad inputs, naming them", () => {
  const ps = Tensor.empty([2, 3], "i32");
  assert.throws(
    () => ropeQK(Tensor.empty([2, 3, 4, 8]), Tensor.empty([2, 3, 2, 6]), ps, { theta: 1e4 }),
    /ropeQK: q \[2, 3, 4, 8\] and k \[2, 3, 2, 6\] must share the head dim D/,
  );
  assert.throws(
    () => ropeQK(Tensor.empty([2, 3, 4, 8]), Tensor.empty([2, 4, 2, 8]), ps, { theta: 1e4 }),
    /positions must be \[B, T\].*x \[2, 4, 2, 8\]/,
  );
});
