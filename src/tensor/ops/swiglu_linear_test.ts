import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import { swigluLinearRef } from "../ref/swiglu.ts";
import { Tensor } from "../tensor.ts";
import { noGrad } from "../grad_mode.ts";
import { checkpoint } from "./checkpoint.ts";
import { clone } from "./basic.ts";
import { round16, TILES, TOL } from "./skinny_testing.ts";
import { swigluLinear, swigluLinearApplies } from "./swiglu_linear.ts";

async function check(
  m: number,
  n: number,
  k: number,
  options: {
    bias?: "both" | "gate" | "up";
    f16?: boolean;
    seed?: number;
    splits?: number;
  } = {},
): Promise<void> {
  const seed = options.seed ?? m * 131 + n * 7 + k;
  const x = randomArray(m * k, seed);
  let wg = randomArray(n * k, seed + 1), wu = randomArray(n * k, seed + 2);
  if (options.f16) [wg, wu] = [round16(wg), round16(wu)];
  const bg = options.bias && options.bias !== "up" ? randomArray(n, seed + 3) : undefined;
  const bu = options.bias && options.bias !== "gate" ? randomArray(n, seed + 4) : undefined;
  const dt = options.f16 ? "f16" : "f32";
  const X = Tensor.from(x, [m, k]);
  const Wg = Tensor.from(wg, [n, k], dt), Wu = Tensor.from(wu, [n, k], dt);
  const Bg = bg ? Tensor.from(bg, [n]) : null, Bu = bu ? Tensor.from(bu, [n]) : null;
  const want = swigluLinearRef(x, { gate: wg, up: wu }, { m, n, k, biasGate: bg, biasUp: bu });
  for (const config of TILES) {
    const Y = swigluLinear(X, Wg, Wu, { biasGate: Bg, biasUp: Bu, config, splits: options.splits });
    assert.deepEqual(Y.shape, [m, n]);
    const label = JSON.stringify({ m, n, k, ...options, config });
    assertClose(await Y.toArray(), want, { ...TOL, label });
    Y.dispose();
  }
}

gpuTest("swigluLinear matches the reference at odd M and N, K not a multiple of BK", async () => {
  for (const [m, n, k] of [[1, 5, 20], [3, 37, 36], [2, 17, 4], [5, 9, 52]]) await check(m, n, k);
});

gpuTest("swigluLinear adds both biases, or one alone", async () => {
  await check(3, 37, 36, { bias: "both" });
  await check(2, 9, 12, { bias: "gate" });
  await check(1, 7, 8, { bias: "up" });
});

gpuTest(
  "swigluLinear split over K: the finishing pass sums gate and up, then activates",
  async () => {
    // K = 52 is 13 vec4s: 2, 3 and 7 splits leave a short last slice (whole stages per split).
    for (const splits of [2, 3, 7]) {
      await check(1, 5, 52, { splits });
      await check(3, 37, 52, { splits, bias: "both" });
    }
    await check(2, 9, 36, { splits: 100, bias: "gate" }); // more splits than K slices
  },
);

gpuTest("swigluLinear with f16 weights (skipped without shader-f16)", async () => {
  await check(2, 37, 36, { f16: true });
  await check(3, 9, 20, { f16: true, bias: "both" });
  await check(1, 37, 36, { f16: true, bias: "both", splits: 3 });
}, { f16: true });

gpuTest("swigluLinear refuses a recorded gradient and bad shapes; applies only without one", () => {
  const X = Tensor.from(randomArray(8, 1), [2, 4]);
  const W = Tensor.from(randomArray(12, 2), [3, 4]);
  W.requiresGrad = true;
  assert.throws(() => swigluLinear(X, W, W), /swiglu_linear: no backward/);
  assert.equal(swigluLinearApplies(X, W, W), false);
  assert.equal(noGrad(() => swigluLinearApplies(X, W, W)), true);
  noGrad(() => swigluLinear(X, W, W)).dispose(); // accepted outside autograd
  const X6 = Tensor.from(randomArray(12, 3), [2, 6]);
  const W6 = Tensor.from(randomArray(18, 4), [3, 6]);
  assert.equal(swigluLinearApplies(X6, W6, W6), false);
  assert.throws(() => swigluLinear(X6, W6, W6), /K must be a multiple of 4, got K=6/);
  assert.throws(() => swigluLinear(X, W6, W6), /x must end in K=6/);
  assert.throws(() => noGrad(() => swigluLinear(X, W, W6)), /same 2-D \[N, K\]/);
});

gpuTest("a checkpointed segment's first forward does not fuse (its recompute could not)", () => {
  const x = Tensor.from(randomArray(2 * 8, 1), [2, 8]);
  const wg = Tensor.from(randomArray(5 * 8, 2), [5, 8]),
    wu = Tensor.from(randomArray(5 * 8, 3), [5, 8]);
  assert.ok(noGrad(() => swigluLinearApplies(x, wg, wu)), "decoding fuses");
  x.requiresGrad = true;
  let inside: boolean | undefined;
  checkpoint(([a]) => {
    inside = swigluLinearApplies(a, wg, wu);
    return clone(a);
  }, [x]);
  assert.equal(inside, false);
});
