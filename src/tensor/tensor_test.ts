/** Tensor's write version: what bumps it (writes, in-place ops), what shares it (views). */
import assert from "node:assert/strict";
import { gpuTest } from "../testing/mod.ts";
import { accumulate, adamwStep, fill, fillInPlace, scaleInPlace, Tensor } from "./mod.ts";

gpuTest(
  "Tensor.version: every write and in-place op bumps it; reads and views do not",
  async () => {
    const t = Tensor.from([1, 2, 3, 4], [4]).keep();
    assert.equal(t.version, 0, "a new tensor");
    const view = t.reshape([2, 2]);
    await t.toArray();
    assert.equal(t.version, 0, "reading and viewing are not writes");
    t.write([5, 6, 7, 8]);
    assert.deepEqual([...await t.toArray()], [5, 6, 7, 8]);
    assert.equal(t.version, 1);
    assert.equal(view.version, 1, "a view shares its base's version");
    fillInPlace(view, 1);
    assert.equal(t.version, 2, "a write through the view is a write of the base");
    scaleInPlace(t, 2);
    accumulate(t, fill([4], 1));
    assert.equal(t.version, 4);
    const m = fill([4], 0), v = fill([4], 0), clip = fill([2], 1), g = fill([4], 0.5);
    const o = { lr: 0.1, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, step: 1 };
    adamwStep(t, g, m, v, clip, o);
    assert.deepEqual([t.version, m.version, v.version, g.version], [5, 1, 1, 0]);
    assert.throws(() => t.write([1, 2]), /2 values do not fill \[4\]/);
    t.dispose();
    assert.throws(() => t.markWritten(), /used after dispose/);
  },
);
