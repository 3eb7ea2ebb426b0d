import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import { linear } from "../ref/matmul.ts";
import { Tensor } from "../tensor.ts";
import { noGrad } from "../grad_mode.ts";
import { checkpoint } from "./checkpoint.ts";
import { clone } from "./basic.ts";
import { round16, TILES, TOL } from "./skinny_testing.ts";
import { qkvLinear, qkvLinearApplies, qkvLinearConfig, qkvLinearPolicy } from "./qkv_linear.ts";
import { skinnyPolicy } from "./matmul_skinny.ts";
import { swigluLinearApplies } from "./swiglu_linear.ts";

/** Rows m, K k, weight rows [nq, nk, nv] (grouped-query: nq != nk = nv). */
async function check(
  m: number,
  ns: [number, number, number],
  k: number,
  options: { bias?: boolean; f16?: boolean; splits?: number; tiles?: typeof TILES } = {},
): Promise<void> {
  const seed = m * 131 + ns[0] * 7 + k;
  const x = randomArray(m * k, seed);
  const ws = ns.map((n, i) => {
    const a = randomArray(n * k, seed + 1 + i);
    return options.f16 ? round16(a) : a;
  });
  const bs = ns.map((n, i) => options.bias ? randomArray(n, seed + 5 + i) : null);
  const dt = options.f16 ? "f16" : "f32";
  const X = Tensor.from(x, [m, k]);
  const W = ns.map((n, i) => Tensor.from(ws[i], [n, k], dt));
  const Bs = ns.map((n, i) => bs[i] ? Tensor.from(bs[i], [n]) : null);
  const { tiles, ...shown } = options;
  for (const config of tiles ?? TILES) {
    const outs = qkvLinear(X, [W[0], W[1], W[2]], [Bs[0], Bs[1], Bs[2]], {
      config,
      splits: options.splits,
    });
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(outs[i].shape, [m, ns[i]]);
      const want = linear(x, ws[i], bs[i], m, k, ns[i]);
      const label = JSON.stringify({ m, ns, k, ...shown, config, out: "qkv"[i] });
      assertClose(await outs[i].toArray(), want, { ...TOL, label });
      outs[i].dispose();
    }
  }
}

gpuTest("qkvLinear matches three reference linears at odd sizes (Nq != Nk = Nv)", async () => {
  const cases: [number, [number, number, number], number][] = [
    [1, [12, 4, 4], 20],
    [3, [37, 9, 9], 36],
    [2, [17, 5, 5], 4],
    [5, [8, 21, 21], 52],
  ];
  for (const [m, ns, k] of cases) await check(m, ns, k);
});

gpuTest("qkvLinear adds the three biases", async () => {
  await check(3, [37, 9, 9], 36, { bias: true });
  await check(1, [16, 8, 8], 8, { bias: true });
});

gpuTest("qkvLinear split over K sums its partials in the finishing pass, biases once", async () => {
  // K = 52 is 13 vec4s: 2, 3 and 7 splits leave a short last slice (whole stages per split).
  for (const splits of [2, 3, 7]) {
    await check(1, [12, 4, 4], 52, { splits });
    await check(3, [37, 9, 9], 52, { splits, bias: true });
  }
  await check(5, [8, 21, 21], 36, { splits: 100, bias: true }); // more splits than K slices
});

gpuTest(
  "qkvLinear's wide tile (what a GPU takes past 128 rows: qkvLinearPolicy)",
  async () => {
    const wide = { ...qkvLinearConfig(qkvLinearPolicy.wideFrom), wgX: qkvLinearPolicy.wideX };
    await check(70, [37, 9, 9], 36, { bias: true, tiles: [wide] }); // two row blocks, a short one
    await check(64, [64, 16, 16], 32, { splits: 3, tiles: [wide] });
  },
);

gpuTest("qkvLinear with f16 weights (skipped without shader-f16)", async () => {
  await check(2, [37, 9, 9], 36, { f16: true });
  await check(3, [9, 5, 5], 20, { f16: true, bias: true });
  await check(1, [37, 9, 9], 36, { f16: true, bias: true, splits: 3 });
}, { f16: true });

gpuTest("qkvLinear refuses a recorded gradient and bad operands; applies only without one", () => {
  const X = Tensor.from(randomArray(8, 1), [2, 4]);
  const W = Tensor.from(randomArray(12, 2), [3, 4]);
  const Wk = Tensor.from(randomArray(8, 3), [2, 4]);
  const B = Tensor.from(randomArray(3, 4), [3]);
  W.requiresGrad = true;
  assert.throws(() => qkvLinear(X, [W, Wk, Wk]), /qkv_linear: no backward/);
  assert.equal(qkvLinearApplies(X, [W, Wk, Wk]), false);
  assert.equal(noGrad(() => qkvLinearApplies(X, [W, Wk, Wk])), true);
  noGrad(() => qkvLinear(X, [W, Wk, Wk])).forEach((t) => t.dispose()); // accepted outside autograd
  assert.equal(noGrad(() => qkvLinearApplies(X, [W, Wk, Wk], [B, null, null])), false);
  assert.throws(() => noGrad(() => qkvLinear(X, [W, Wk, Wk], [B, null, null])), /all three/);
  assert.throws(() => noGrad(() => qkvLinear(X, [W, Wk, Wk], [B, B, B])), /bias_k must be \[2\]/);
  // Small weights (all together) take up to skinnyPolicy.maxMSmall rows, larger ones maxM.
  const rows = (m: number) => Tensor.from(randomArray(m * 4, 5), [m, 4]);
  const edge = rows(skinnyPolicy.maxM), many = rows(skinnyPolicy.maxM + 1);
  const tooMany = rows(skinnyPolicy.maxMSmall + 1);
  assert.equal(noGrad(() => qkvLinearApplies(many, [W, Wk, Wk])), true);
  assert.equal(noGrad(() => qkvLinearApplies(tooMany, [W, Wk, Wk])), false);
  assert.equal(noGrad(() => swigluLinearApplies(many, W, W)), true);
  const half = Tensor.empty([skinnyPolicy.smallWeights / 8 + 1, 4]); // two: just past small
  assert.equal(noGrad(() => swigluLinearApplies(many, half, half)), false);
  assert.equal(noGrad(() => swigluLinearApplies(edge, half, half)), true);
  [edge, many, tooMany, half].forEach((t) => t.dispose());
  const X6 = Tensor.from(randomArray(12, 3), [2, 6]);
  const W6 = Tensor.from(randomArray(18, 4), [3, 6]);
  assert.equal(qkvLinearApplies(X6, [W6, W6, W6]), false);
  assert.throws(() => qkvLinear(X6, [W6, W6, W6]), /K must be a multiple of 4, got K=6/);
  assert.throws(() => noGrad(() => qkvLinear(X, [W, W6, W6])), /2-D \[N, K=4\]/);
});

gpuTest("qkvLinear: a checkpointed segment's first forward does not fuse", () => {
  const x = Tensor.from(randomArray(2 * 8, 1), [2, 8]);
  const wq = Tensor.from(randomArray(6 * 8, 2), [6, 8]),
    wk = Tensor.from(randomArray(16, 3), [2, 8]);
  assert.ok(noGrad(() => qkvLinearApplies(x, [wq, wk, wk])), "decoding fuses");
  x.requiresGrad = true;
  let inside: boolean | undefined;
  checkpoint(([a]) => {
    inside = qkvLinearApplies(a, [wq, wk, wk]);
    return clone(a);
  }, [x]);
  assert.equal(inside, false);
});
