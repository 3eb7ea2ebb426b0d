import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import { gradNormRef } from "../ref/grad_norm.ts";
import { Tensor } from "../tensor.ts";
import { gradNormAndScale } from "./grad_norm.ts";

gpuTest("global grad norm over tensors of very different sizes matches the reference", async () => {
  const sizes = [1, 7, 256, 2049, 5000];
  const arrays = sizes.map((n, i) => randomArray(n, 10 + i));
  const grads = arrays.map((a) => Tensor.from(a, [a.length]));
  for (const maxNorm of [Infinity, 1.0, 1e6]) {
    const [norm, scale] = await gradNormAndScale(grads, maxNorm).toArray();
    const ref = gradNormRef(arrays, maxNorm);
    assertClose([norm, scale], [ref.norm, ref.scale], { rtol: 1e-5 });
  }
});

gpuTest("a non-finite gradient gives a non-finite norm and a zero scale", async () => {
  const g = Tensor.from([1, NaN, 2], [3]);
  const [norm, scale] = await gradNormAndScale([g], 1).toArray();
  assert.ok(!Number.isFinite(norm));
  assert.equal(scale, 0);
  const inf = Tensor.from([Infinity, 0], [2]);
  assert.equal((await gradNormAndScale([inf], 1).toArray())[1], 0);
});

gpuTest("grad norm rejects non-f32 gradients", () => {
  assert.throws(() => gradNormAndScale([Tensor.from([1], [1], "i32")]), /must be f32/);
});
