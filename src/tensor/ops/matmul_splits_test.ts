import assert from "node:assert/strict";
import { TILES } from "./matmul_kernel.ts";
import { gpu } from "../../gpu/mod.ts";
import { gpuTest } from "../../testing/mod.ts";
import { splitPlan, splitPolicy, tiledPlan, waveSplits } from "./matmul_splits.ts";

const large = TILES.large;
const tile = { bm: 128, bn: 128, bk: large.bk, threads: large.wgX * large.wgY }; // two blocks per multiprocessor
const split = (m: number, n: number, k: number, most = 64) =>
  waveSplits({
    m,
    n,
    k,
    blocks: Math.ceil(m / 128) * Math.ceil(n / 128),
    tile,
    most,
    multiprocessors: 132,
  });

Deno.test("waveSplits leaves whole a product that fills its waves", () => {
  assert.equal(split(128 * 33, 128 * 8, 3072), 1); // 264 blocks: exactly one wave
  assert.equal(split(3072, 4864, 896), 1); // 912 blocks: 3.5 waves, K too short to pay for splits
});

Deno.test("waveSplits splits a product whose last wave would be nearly empty", () => {
  // 266 blocks on 264 slots: whole, the two extra blocks take a second wave of full length.
  const s = split(4864, 896, 3072);
  assert.ok(s > 1, `split ${s}`);
  assert.ok(Math.ceil((266 * s) / 264) / s < 2 * 0.75, "the split saves at least a quarter");
});

Deno.test("waveSplits fills a GPU with a product of few blocks, within the allowed splits", () => {
  assert.equal(split(3072, 896, 896), 3); // 168 blocks: 504 in two waves beat one wave whole
  assert.equal(split(896, 896, 3072, 4), 4); // 49 blocks, at most 4 splits allowed
  assert.equal(split(128, 896, 3072, 1), 1);
});

const plan = (m: number, n: number, k: number, align = 256) =>
  splitPlan({ batch: 1, m, n, k }, tile, { multiprocessors: 132, align });

Deno.test("splitPlan runs a nearly empty last wave apart, along rows or columns", () => {
  // 38 x 7 blocks on 264 slots: 37 rows of blocks whole in one wave, the last row split over K.
  const rowsApart = plan(4864, 896, 6144);
  assert.equal(rowsApart.splits, 1);
  assert.deepEqual(rowsApart.tail, { along: "m", blocks: 1, splits: 32 });
  // 7 x 38: the same by columns (rows would leave 6 x 38 = 228 blocks in the whole wave).
  assert.deepEqual(plan(896, 4864, 6144).tail, { along: "n", blocks: 1, splits: 32 });
});

Deno.test("splitPlan keeps the plain split where no tail models cheaper", () => {
  assert.deepEqual(plan(128 * 33, 128 * 8, 3072), { splits: 1, tail: null }); // whole waves
  assert.deepEqual(plan(896, 896, 6144), { splits: 5, tail: null }); // 49 blocks: under a wave
  assert.deepEqual(plan(6144, 4864, 896), { splits: 1, tail: null }); // 6.9 waves
});

Deno.test("splitPlan: a tail whose sums would start off the binding alignment is not taken", () => {
  // Rows apart start at row 37 * 128 of 896 columns (17 MB in: aligned); a 2^30 alignment is not.
  assert.equal(plan(4864, 896, 6144, 2 ** 30).tail, null);
});

Deno.test("splitPlan without tails (splitPolicy.tails) is the wave model's split", () => {
  splitPolicy.tails = false;
  try {
    assert.deepEqual(plan(4864, 896, 6144), { splits: split(4864, 896, 6144, 48), tail: null });
  } finally {
    splitPolicy.tails = true;
  }
});

gpuTest("tiledPlan: a CPU adapter or a batch of products runs unsplit and whole", () => {
  const big = { batch: 1, m: 4864, n: 896, k: 6144 };
  if (gpu().isCpuAdapter) assert.deepEqual(tiledPlan(big, tile), { splits: 1, tail: null });
  assert.deepEqual(tiledPlan({ ...big, batch: 2 }, tile), { splits: 1, tail: null });
});
