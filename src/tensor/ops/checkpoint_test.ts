import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { Tensor } from "../tensor.ts";
import { checkpoint } from "./checkpoint.ts";
import { mul } from "./elementwise.ts";
import { linear } from "./matmul.ts";
import { sum } from "./reduce.ts";
import { rmsNorm } from "./rmsnorm.ts";
import { swiglu } from "./swiglu.ts";

const N = 5, C = 8, I = 12;

/** Two segments of norm -> gated MLP -> projection; weights per segment. */
function makeParams(seed: number) {
  const p = (n: number, s: number, lo = -0.5, hi = 0.5) =>
    Tensor.from(randomArray(n, s, lo, hi), [n]);
  return [0, 1].map((k) => ({
    norm: p(C, seed + 10 * k, 0.5, 1.5),
    gate: p(I * C, seed + 10 * k + 1).reshape([I, C]),
    up: p(I * C, seed + 10 * k + 2).reshape([I, C]),
    down: p(C * I, seed + 10 * k + 3).reshape([C, I]),
  }));
}
type Params = ReturnType<typeof makeParams>[number];
const segment = (x: Tensor, w: Params) => {
  const h = rmsNorm(x, w.norm, { eps: 1e-6 });
  return linear(swiglu(linear(h, w.gate), linear(h, w.up)), w.down);
};

async function grads(useCheckpoint: boolean, inputNeedsGrad: boolean) {
  const params = makeParams(1);
  const all = params.flatMap((w) => Object.values(w));
  for (const t of all) t.requiresGrad = true;
  const x = Tensor.from(randomArray(N * C, 2, -1, 1), [N, C]);
  x.requiresGrad = inputNeedsGrad;
  let h = x;
  for (const w of params) {
    h = useCheckpoint
      ? checkpoint(([a]) => segment(a, w), [h], { params: Object.values(w) })
      : segment(h, w);
  }
  const loss = sum(mul(h, Tensor.from(randomArray(N * C, 3, -1, 1), [N, C])));
  const value = (await loss.toArray())[0];
  backward(loss);
  const out = await Promise.all(all.map((t) => t.grad!.toArray()));
  return { value, params: out, x: inputNeedsGrad ? await x.grad!.toArray() : null };
}

gpuTest("checkpoint: the loss and every gradient equal the taped forward's", async () => {
  for (const inputNeedsGrad of [true, false]) {
    const a = await grads(false, inputNeedsGrad), b = await grads(true, inputNeedsGrad);
    assert.equal(b.value, a.value);
    a.params.forEach((g, i) => assertClose(b.params[i], g, { atol: 1e-6, label: `param ${i}` }));
    if (inputNeedsGrad) assertClose(b.x!, a.x!, { atol: 1e-6, label: "input" });
  }
});

gpuTest("checkpoint: off the tape it is the plain call", async () => {
  const [w] = makeParams(4);
  const x = Tensor.from(randomArray(N * C, 5, -1, 1), [N, C]);
  const y = checkpoint(([a]) => segment(a, w), [x]);
  assert.equal(y.node, null);
  assertClose(await y.toArray(), await segment(x, w).toArray(), { atol: 0 });
});
