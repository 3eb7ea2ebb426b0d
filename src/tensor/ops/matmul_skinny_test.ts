import assert from "node:assert/strict";
import { gpu } from "../../gpu/mod.ts";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import * as ref from "../ref/matmul.ts";
import { roundToF16 } from "../half.ts";
import { Tensor } from "../tensor.ts";
import {
  gemmSkinny,
  type SkinnyConfig,
  skinnyConfig,
  skinnyMaxM,
  skinnyPolicy,
  skinnySplits,
} from "./matmul_skinny.ts";

const TOL = { atol: 1e-4, rtol: 1e-4 };

// The production tiles take 20-50 s each to compile on Mesa's CPU adapter, so there the tests use
// small tiles through the same code paths: several thread rows and columns, one row of x per
// thread, and tiles whose load slots do not divide evenly among the threads. A GPU runs the
// production tiles (`skinnyConfig`).
const CPU_TILES: SkinnyConfig[] = [
  { wgX: 2, wgY: 2, tn: 4, tm: 4, bk: 8 },
  { wgX: 4, wgY: 4, tn: 4, tm: 1, bk: 16 },
  { wgX: 2, wgY: 4, tn: 8, tm: 4, bk: 4 },
];

function tileFor(m: number, seed: number): SkinnyConfig {
  return gpu().isCpuAdapter ? CPU_TILES[seed % CPU_TILES.length] : skinnyConfig(m);
}

/** Runs the skinny kernel on random x [M, K], w [N, K] (+ bias) against the CPU reference. */
async function check(
  m: number,
  n: number,
  k: number,
  options: { bias?: boolean; splits?: number; f16?: boolean; seed?: number } = {},
): Promise<void> {
  const seed = options.seed ?? m * 131 + n * 7 + k;
  const x = randomArray(m * k, seed);
  let w = randomArray(n * k, seed + 1);
  const b = options.bias ? randomArray(n, seed + 2) : null;
  if (options.f16) w = w.map(roundToF16);
  const X = Tensor.from(x, [m, k]);
  const W = Tensor.from(w, [n, k], options.f16 ? "f16" : "f32");
  const B = b ? Tensor.from(b, [n]) : null;
  const Y = Tensor.empty([m, n]);
  const config = tileFor(m, seed);
  gemmSkinny(X, W, Y, { m, n, k }, { bias: B, splits: options.splits, config });
  const label = JSON.stringify({ m, n, k, ...options, config });
  assertClose(await Y.toArray(), ref.linear(x, w, b, m, k, n), { ...TOL, label });
}

gpuTest("skinny matmul matches the reference at odd M and N, K not a multiple of BK", async () => {
  // M = 1, 3, 17, 64 take the four register-tile sizes; N crosses block edges (128).
  const cases = [[1, 5, 20], [3, 130, 36], [17, 37, 4], [64, 131, 52], [70, 9, 24]];
  for (const [m, n, k] of cases) {
    for (let seed = 0; seed < (gpu().isCpuAdapter ? 3 : 1); seed++) await check(m, n, k, { seed });
  }
});

gpuTest("skinny matmul adds the bias, with one split and with split K", async () => {
  await check(3, 37, 36, { bias: true, splits: 1 });
  await check(17, 130, 100, { bias: true, splits: 3 });
  await check(64, 5, 68, { splits: 5 }); // 5 stages of 16: one per split, the last one short
  await check(2, 7, 8, { bias: true, splits: 4 }); // more splits than stages: clamped
});

gpuTest("skinny matmul with an f16 weight (skipped without shader-f16)", async () => {
  await check(5, 130, 36, { f16: true, bias: true });
  await check(64, 37, 100, { f16: true, splits: 3 });
}, { f16: true });

gpuTest("skinny split policy: few output blocks split K, many do not", () => {
  const c = skinnyConfig(64);
  assert.equal(skinnySplits({ m: 64, n: 151936, k: 896 }, c), 1);
  const down = skinnySplits({ m: 64, n: 896, k: 4864 }, c);
  assert.ok(down > 4, `down projection split ${down} ways`);
  assert.ok(skinnySplits({ m: 64, n: 896, k: 16 }, c) === 1, "a single stage is never split");
});

gpuTest("skinny matmul rejects K that is not a multiple of 4", () => {
  const X = Tensor.from(new Float32Array(6), [2, 3]);
  const W = Tensor.from(new Float32Array(12), [4, 3]);
  assert.throws(
    () => gemmSkinny(X, W, Tensor.empty([2, 4]), { m: 2, n: 4, k: 3 }),
    /skinny kernel needs K % 4 == 0, got K=3/,
  );
});

Deno.test("skinnyMaxM: more rows for small weights", () => {
  const { maxM, maxMSmall, smallWeights } = skinnyPolicy;
  assert.ok(maxMSmall > maxM);
  assert.equal(skinnyMaxM(896 * 896), maxMSmall); // an attention projection of the 0.5B shape
  assert.equal(skinnyMaxM(smallWeights), maxMSmall);
  assert.equal(skinnyMaxM(smallWeights + 1), maxM);
  assert.equal(skinnyMaxM(2 * 4864 * 896), maxM); // its gate and up
  assert.equal(skinnyMaxM(151936 * 896), maxM); // its LM head
});
