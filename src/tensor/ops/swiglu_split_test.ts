import assert from "node:assert/strict";
import { gpuTest, randomArray } from "../../testing/mod.ts";
import { gpu } from "../../gpu/mod.ts";
import { backward } from "../autograd.ts";
import { noGrad } from "../grad_mode.ts";
import { roundToF16 } from "../half.ts";
import { Tensor } from "../tensor.ts";
import { linear } from "./matmul.ts";
import { gemm } from "./matmul_kernel.ts";
import { sum } from "./reduce.ts";
import { swiglu } from "./swiglu.ts";
import { swigluProducts, swigluSplitPolicy } from "./swiglu_split.ts";
import { swigluWovenPlan, swigluWovenPolicy } from "./swiglu_woven.ts";

const [M, N, K] = [6, 40, 64];

function operands(seed: number, half: boolean) {
  const w = (s: number) => {
    const a = randomArray(N * K, s);
    return Tensor.from(half ? a.map(roundToF16) : a, [N, K], half ? "f16" : "f32");
  };
  return {
    x: Tensor.from(randomArray(M * K, seed), [2, M / 2, K]),
    wg: w(seed + 1),
    wu: w(seed + 2),
    bg: Tensor.from(randomArray(N, seed + 3), [N]),
    bu: Tensor.from(randomArray(N, seed + 4), [N]),
  };
}

gpuTest("swigluProducts equals the split products' sums then swiglu, bit for bit", async () => {
  const d = { batch: 1, m: M, n: N, k: K, transA: false, transB: true, strideA: 0, strideB: 0 };
  const cases = [[3, false, "both"], [2, true, "none"], [5, false, "none"], [4, false, "up"]];
  // Woven: one product over both weights and its pass; past the woven product's rows, two
  // products and one pass.
  const maxM = swigluWovenPolicy.maxM;
  for (const [woven, dispatches] of [[true, 2], [false, 3]] as const) {
    for (const [splits, half, biased] of cases) {
      swigluWovenPolicy.maxM = woven ? M : M - 1;
      const { x, wg, wu, bg, bu } = operands(10 * Number(splits), half as boolean);
      // A lone bias: the pass binds zeros in place of the other.
      const [b1, b2] = biased === "both" ? [bg, bu] : biased === "up" ? [null, bu] : [null, null];
      swigluSplitPolicy.splits = splits as number;
      try {
        const d0 = gpu().recorder.dispatches;
        const y = noGrad(() => swigluProducts(x, wg, wu, { biasGate: b1, biasUp: b2 }));
        const label = JSON.stringify({ woven, splits, half, biased });
        assert.equal(gpu().recorder.dispatches - d0, dispatches, label);
        assert.deepEqual(y.shape, [2, M / 2, N]);
        const [g, u] = [Tensor.empty([M, N]), Tensor.empty([M, N])];
        // The woven product's tile (a GPU would take few rows skinny), or each product's own.
        const tile = woven ? swigluWovenPlan(M, N).tile : undefined;
        gemm(x, wg, g, d, { bias: b1, splits: splits as number, tile });
        gemm(x, wu, u, d, { bias: b2, splits: splits as number, tile });
        assert.deepEqual(await y.toArray(), await swiglu(g, u).toArray(), label);
      } finally {
        swigluSplitPolicy.splits = null;
        swigluWovenPolicy.maxM = maxM;
      }
    }
  }
});

gpuTest("swigluProducts unsplit, or with the policy off, is swiglu(linear, linear)", async () => {
  const { x, wg, wu, bg, bu } = operands(3, false);
  const want = await swiglu(linear(x, wg, bg), linear(x, wu, bu)).toArray();
  for (const [enabled, woven] of [[true, true], [true, false], [false, false]]) {
    swigluSplitPolicy.enabled = enabled;
    swigluWovenPolicy.enabled = woven;
    try {
      const y = noGrad(() => swigluProducts(x, wg, wu, { biasGate: bg, biasUp: bu }));
      assert.deepEqual(await y.toArray(), want, JSON.stringify({ enabled, woven }));
    } finally {
      swigluSplitPolicy.enabled = true;
      swigluWovenPolicy.enabled = true;
    }
  }
});

gpuTest("swigluProducts under the tape is swiglu(linear, linear) with its gradients", async () => {
  const { x, wg, wu } = operands(5, false);
  x.requiresGrad = wg.requiresGrad = true;
  swigluSplitPolicy.splits = 2;
  try {
    const y = swigluProducts(x, wg, wu);
    assert.ok(y.requiresGrad);
    backward(sum(y));
    assert.ok((await x.grad!.toArray()).some((v) => v !== 0) && wg.grad !== null);
  } finally {
    swigluSplitPolicy.splits = null;
  }
});

gpuTest("swigluProducts leaves operands that do not fit to linear's error", () => {
  const { x, wg } = operands(7, false);
  const wide = Tensor.from(randomArray(N * (K + 4), 1), [N, K + 4]);
  assert.throws(() => noGrad(() => swigluProducts(x, wide, wide)), /linear: x must end in in=68/);
  assert.throws(
    () => noGrad(() => swigluProducts(x, wg, Tensor.from(randomArray(8 * K, 2), [8, K]))),
    /swiglu: gate and up must have the same shape/,
  );
});
