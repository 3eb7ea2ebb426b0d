import assert from "node:assert/strict";
import { gpu } from "../gpu/mod.ts";
import { assertClose, gpuTest, randomArray } from "../testing/mod.ts";
import {
  accumulate,
  backward,
  clone,
  fill,
  fillInPlace,
  noGrad,
  record,
  recordMany,
  scaleInPlace,
  scope,
  Tensor,
  zeroGrad,
  zeros,
} from "./mod.ts";
import { axpyRef, fillRef, scaleRef } from "./ref/basic.ts";

// A test-only differentiable op built from the core kernels: out = 2 * x (copy, then add x again).
function double(x: Tensor): Tensor {
  const out = clone(x, "double");
  accumulate(out, x);
  return record("double_test", [x], out, (g) => {
    const gx = clone(g);
    accumulate(gx, g);
    return [gx];
  });
}

// out = a + b (same shape), the gradient passes through to both inputs.
function addSame(a: Tensor, b: Tensor): Tensor {
  const out = clone(a, "add");
  accumulate(out, b);
  return record("add_test", [a, b], out, (g) => [g, g]);
}

gpuTest("tensor round-trips f32, i32, u32 and f16 data", async () => {
  const x = randomArray(1000, 1);
  assertClose(await Tensor.from(x, [10, 100]).toArray(), x, { atol: 0, rtol: 0 });
  const i = Int32Array.from([-3, 0, 7, 2 ** 30]);
  assert.deepEqual([...await Tensor.from(i, [4], "i32").toArray()], [...i]);
  const h = await Tensor.from([1, -2.5, 65504, 1e-3], [4], "f16").toArray();
  assertClose(h, [1, -2.5, 65504, 1e-3], { rtol: 1e-3 });
});

gpuTest("basic kernels (fill, scale, accumulate, clone) match their references", async () => {
  // 1000 elements span several workgroups and end inside one.
  const n = 1000, x = randomArray(n, 2), y = randomArray(n, 3);
  assertClose(await fill([n], -1.5).toArray(), fillRef(n, -1.5), { atol: 0, rtol: 0 });
  assertClose(await zeros([4, 5]).toArray(), fillRef(20, 0), { atol: 0, rtol: 0 });
  const t = Tensor.from(y, [n]);
  scaleInPlace(t, 0.75);
  assertClose(await t.toArray(), scaleRef(y, 0.75));
  const acc = Tensor.from(y, [n]);
  accumulate(acc, Tensor.from(x, [n]), -2);
  const summed = await acc.toArray();
  assertClose(summed, axpyRef(y, x, -2));
  const copy = clone(acc);
  fillInPlace(acc, 7); // the clone owns its own buffer
  assertClose(await copy.toArray(), summed, { atol: 0, rtol: 0 });
  assertClose(await acc.toArray(), fillRef(n, 7), { atol: 0, rtol: 0 });
});

gpuTest("gradients flow through shared inputs and accumulate across micro-batches", async () => {
  const x = Tensor.from([1, 2, 3], [3]).keep();
  x.requiresGrad = true;
  for (let micro = 0; micro < 2; micro++) {
    scope(() => {
      const y = addSame(double(x), x); // y = 3x, seeded with ones -> grad 3 per micro-batch
      backward(y, fill([3], 1));
    });
  }
  assertClose(await x.grad!.toArray(), [6, 6, 6]);
  zeroGrad([x]);
  assert.equal(x.grad, null);
  x.dispose();
});

gpuTest("noGrad records nothing and backward rejects a non-scalar loss", () => {
  const x = Tensor.from([1, 2], [2]);
  x.requiresGrad = true;
  const y = noGrad(() => double(x));
  assert.equal(y.node, null);
  const z = double(x);
  assert.throws(() => backward(z), /loss must be a scalar, got shape \[2\]/);
});

gpuTest("scopes release intermediates and keep results", () => {
  const before = gpu().pool.inUseBytes;
  const kept = scope(() => {
    fill([1024], 1);
    return fill([16], 2);
  });
  assert.equal(gpu().pool.inUseBytes - before, kept.byteSize < 64 ? 64 : kept.byteSize);
  assert.throws(() => Tensor.from([1, 2, 3], [2, 2]), /3 values do not fill shape \[2, 2\]/);
  kept.dispose();
  assert.throws(() => kept.buffer, /used after dispose/);
});

gpuTest("oversize buffers name the limit and the size", () => {
  const limit = gpu().limits.maxStorageBufferBindingSize;
  assert.throws(
    () => Tensor.empty([limit / 4 + 16], "f32", "huge"),
    /huge.*exceeds maxStorageBufferBindingSize/,
  );
});

gpuTest("one backward seeds several outputs that share a graph", async () => {
  const x = Tensor.from([1, 2], [2]).keep();
  x.requiresGrad = true;
  const h = double(x); // shared branch
  const a = double(h), b = addSame(h, x);
  backward([a, b], [fill([2], 1), fill([2], 10)]);
  // d/dx: a = 4x -> 4 ; b = 3x -> 3 * 10 = 30 ; total 34
  assertClose(await x.grad!.toArray(), [34, 34]);
  x.dispose();
});

gpuTest("gradients flow through reshaped views", async () => {
  const x = Tensor.from([1, 2, 3, 4, 5, 6], [2, 3]).keep();
  x.requiresGrad = true;
  const y = double(x.reshape([3, 2]));
  backward(y, fill([3, 2], 1));
  assert.deepEqual(x.grad!.shape, [2, 3]);
  assertClose(await x.grad!.toArray(), [2, 2, 2, 2, 2, 2]);
  x.dispose();
});

// A test-only op with two outputs: p = 2 x and q = x, one backward for both (2 gp + gq).
function twin(x: Tensor, calls: { n: number; seen: (Tensor | null)[][] }): [Tensor, Tensor] {
  const p = clone(x, "twin.p");
  accumulate(p, x);
  const q = clone(x, "twin.q");
  const [po, qo] = recordMany("twin_test", [x], [p, q], ([gp, gq]) => {
    calls.n++;
    calls.seen.push([gp, gq]);
    const gx = zeros(x.shape);
    if (gp) { for (const _ of [0, 1]) accumulate(gx, gp); }
    if (gq) accumulate(gx, gq);
    return [gx];
  });
  return [po, qo];
}

gpuTest(
  "recordMany: one backward per op, after every output used (twice or not at all)",
  async () => {
    const calls = { n: 0, seen: [] as (Tensor | null)[][] };
    const x = Tensor.from([1, 2, 3], [3]).keep();
    x.requiresGrad = true;
    scope(() => {
      const [p, q] = twin(x, calls);
      // p twice, q through another op: d/dx (2p + 2q) = 4 + 2
      const z = addSame(addSame(p, p), double(q));
      backward(z, fill([3], 1));
    });
    assert.equal(calls.n, 1, "the shared backward runs once");
    assert.ok(calls.seen[0][0] && calls.seen[0][1], "both outputs' gradients reach it");
    assertClose(await x.grad!.toArray(), [6, 6, 6]);

    zeroGrad([x]);
    scope(() => {
      const [, q] = twin(x, calls);
      backward(double(q), fill([3], 1));
    });
    assert.equal(calls.n, 2);
    assert.equal(calls.seen[1][0], null, "an output the loss does not reach gets null");
    assertClose(await x.grad!.toArray(), [2, 2, 2]);
  },
);

gpuTest("an op whose gradient passes to the same input twice (x + x) doubles it", async () => {
  const x = Tensor.from([1, 2], [2]).keep();
  x.requiresGrad = true;
  scope(() => backward(addSame(x, x), fill([2], 1)));
  assertClose(await x.grad!.toArray(), [2, 2]);
  x.dispose();
});
