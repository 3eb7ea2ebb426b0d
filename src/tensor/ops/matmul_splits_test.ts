import assert from "node:assert/strict";
import { TILES, waveSplits } from "./matmul_kernel.ts";

const tile = TILES.large; // 256 threads: two blocks per multiprocessor in the model
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
