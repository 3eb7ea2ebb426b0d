import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../testing/mod.ts";
import { adamwRef } from "../tensor/mod.ts";
import { Tensor } from "../tensor/mod.ts";
import { gradNormAndScale } from "../tensor/mod.ts";
import { AdamW } from "./optim.ts";

const OPTS = { lr: 0.01, betas: [0.9, 0.999] as [number, number], eps: 1e-8, weightDecay: 0.1 };

gpuTest(
  "AdamW matches the reference over several steps, with clipping and weight decay",
  async () => {
    const n = 1031;
    const p0 = randomArray(n, 1), m = new Float32Array(n), v = new Float32Array(n);
    const ref = Float32Array.from(p0);
    const param = Tensor.from(p0, [n]).keep();
    param.requiresGrad = true;
    const opt = new AdamW([param], OPTS);
    for (let step = 1; step <= 3; step++) {
      const g = randomArray(n, 100 + step, -3, 3);
      param.grad = Tensor.from(g, [n]).keep();
      const clip = gradNormAndScale([param.grad], 5);
      const [, scale] = await clip.toArray();
      opt.step({ clip });
      adamwRef(ref, g, m, v, {
        lr: OPTS.lr,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        weightDecay: 0.1,
        step,
        gradScale: scale,
      });
      opt.zeroGrad();
    }
    assertClose(await param.toArray(), ref, { atol: 1e-6, rtol: 1e-5 });
    const state = await opt.state();
    assert.equal(state.step, 3);
    assertClose(state.m[0], m, { atol: 1e-6, rtol: 1e-5 });
    assertClose(state.v[0], v, { atol: 1e-7, rtol: 1e-5 });
  },
);

gpuTest("a zero clip scale (non-finite norm) leaves parameters and moments untouched", async () => {
  const param = Tensor.from([1, 2, 3], [3]).keep();
  const opt = new AdamW([param], OPTS);
  param.grad = Tensor.from([NaN, 1, 1], [3]).keep();
  opt.step({ clip: gradNormAndScale([param.grad], 1) });
  assert.deepEqual([...await param.toArray()], [1, 2, 3]);
  assert.deepEqual([...(await opt.state()).m[0]], [0, 0, 0]);
});

gpuTest("optimizer state round-trips through loadState", async () => {
  const a = Tensor.from([1, 2], [2]).keep();
  const opt = new AdamW([a], OPTS);
  opt.loadState({ step: 7, m: [Float32Array.from([0.5, -1])], v: [Float32Array.from([2, 3])] });
  const s = await opt.state();
  assert.equal(s.step, 7);
  assert.deepEqual([...s.m[0]], [0.5, -1]);
  assert.throws(
    () => opt.loadState({ step: 1, m: [new Float32Array(3)], v: [new Float32Array(3)] }),
    /size does not match/,
  );
});
