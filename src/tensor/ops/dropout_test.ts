import assert from "node:assert/strict";
import { gpuTest, randomArray } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { dropoutRef, kept, pcgHash } from "../ref/dropout.ts";
import { Tensor } from "../tensor.ts";
import { dropout } from "./dropout.ts";

Deno.test("dropout reference: PCG bits, the kept fraction, a mask fixed by its seed", () => {
  // pcg_hash(0) and pcg_hash(1) as the C reference (u32 arithmetic) gives them.
  assert.equal(pcgHash(0), 129708002);
  assert.equal(pcgHash(1), 2831084092);
  const n = 20000, ones = new Float32Array(n).fill(1);
  for (const p of [0.05, 0.3]) {
    const y = dropoutRef(ones, p, 7);
    const keptShare = y.filter((v) => v !== 0).length / n;
    assert.ok(Math.abs(keptShare - (1 - p)) < 0.015, `p=${p}: kept ${keptShare}`);
    assert.ok(y.every((v) => v === 0 || v === Math.fround(1 / (1 - p))));
    assert.deepEqual(dropoutRef(ones, p, 7), y, "same seed, same mask");
    assert.notDeepEqual(dropoutRef(ones, p, 8), y, "another seed, another mask");
  }
  assert.deepEqual(dropoutRef(ones.subarray(0, 10), 0, 3), ones.subarray(0, 10), "p = 0 keeps all");
  assert.equal(kept(5, 1, 0), true);
});

gpuTest(
  "dropout on the GPU draws the reference's mask; its gradient is the same mask",
  async () => {
    const n = 5000, p = 0.25, seed = 123456789;
    const x = randomArray(n, 1), g = randomArray(n, 2);
    const X = Tensor.from(x, [50, 100]);
    X.requiresGrad = true;
    const Y = dropout(X, p, seed);
    assert.deepEqual([...Y.shape], [50, 100]);
    assert.deepEqual(await Y.toArray(), dropoutRef(x, p, seed));
    backward(Y, Tensor.from(g, [50, 100]));
    assert.deepEqual(await X.grad!.toArray(), dropoutRef(g, p, seed));
    const again = await dropout(Tensor.from(x, [n]), p, seed).toArray();
    assert.deepEqual(again, dropoutRef(x, p, seed), "the mask depends on (seed, index) only");
  },
);

gpuTest("dropout refuses a probability outside [0, 1), a seed that is not a u32, non-f32", () => {
  const x = Tensor.from([1, 2, 3], [3]);
  assert.throws(() => dropout(x, 1, 0), /drop probability must be in \[0, 1\), got 1/);
  assert.throws(() => dropout(x, -0.1, 0), /got -0.1/);
  assert.throws(() => dropout(x, 0.1, 1.5), /seed must be a u32, got 1.5/);
  assert.throws(() => dropout(Tensor.from([1], [1], "i32"), 0.1, 0), /expected f32, got i32/);
});
