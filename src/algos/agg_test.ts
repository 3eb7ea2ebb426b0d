import assert from "node:assert/strict";
import { aggLoss, aggLossWeights, LOSS_AGG_MODES } from "./agg.ts";
import { assertClose, finiteDiff, rng } from "./test_util.ts";

// rows: [1,2,3] all valid | [4,100,5] with the middle (tool output) masked | all padding (NaN)
const L = new Float64Array([1, 2, 3, 4, 100, 5, NaN, NaN, NaN]);
const M = new Float32Array([1, 1, 1, 1, 0, 1, 0, 0, 0]);

Deno.test("aggLoss: hand-computed modes, middle mask and all-padding row", () => {
  // token-mean: (1+2+3+4+5)/5 = 3
  assert.equal(aggLoss(L, M, "token-mean", { R: 3 }), 3);
  // seq sums 6 and 9 over the G = 2 non-empty rows: 15/2 = 7.5
  assert.equal(aggLoss(L, M, "seq-mean-token-sum", { R: 3 }), 7.5);
  // seq means 2 and 4.5: (2 + 4.5)/2 = 3.25
  assert.equal(aggLoss(L, M, "seq-mean-token-mean", { R: 3 }), 3.25);
  // 15/2 / H, H = R = 3 -> 2.5
  assert.equal(aggLoss(L, M, "seq-mean-token-sum-norm", { R: 3 }), 2.5);
});

Deno.test("aggLoss: global denominators, dp scaling, horizon override", () => {
  assert.equal(aggLoss(L, M, "token-mean", { R: 3, batchNumTokens: 10 }), 1.5); // 15/10
  assert.equal(aggLoss(L, M, "token-mean", { R: 3, batchNumTokens: 10, dpSize: 2 }), 3); // ·2
  assert.equal(aggLoss(L, M, "seq-mean-token-sum", { R: 3, globalBatchSize: 4 }), 3.75); // 15/4
  assert.equal(aggLoss(L, M, "seq-mean-token-mean", { R: 3, globalBatchSize: 4 }), 1.625); // 6.5/4
  assert.equal(aggLoss(L, M, "seq-mean-token-sum-norm", { R: 3, lossScaleFactor: 5 }), 1.5); // 7.5/5
  assert.throws(() => aggLoss(L, M, "token-mean", { R: 3, dpSize: 2 }), /batchNumTokens/);
  assert.throws(() => aggLoss(L, M, "seq-mean-token-sum", { R: 3, dpSize: 2 }), /globalBatchSize/);
});

Deno.test("aggLossWeights: hand values; nothing valid gives 0, not NaN", () => {
  const third = 1 / 6;
  assertClose(aggLossWeights(M, "token-mean", { R: 3 }), [.2, .2, .2, .2, 0, .2, 0, 0, 0]);
  // row0: 1/(3 tokens · 2 rows); row1: 1/(2 tokens · 2 rows)
  assertClose(aggLossWeights(M, "seq-mean-token-mean", { R: 3 }), [
    third,
    third,
    third,
    .25,
    0,
    .25,
    0,
    0,
    0,
  ]);
  assertClose(aggLossWeights(M, "seq-mean-token-sum-norm", { R: 3 }), [
    third,
    third,
    third,
    third,
    0,
    third,
    0,
    0,
    0,
  ]);
  const empty = new Float32Array(6);
  for (const mode of LOSS_AGG_MODES) {
    assert.equal(aggLoss(new Float64Array(6).fill(NaN), empty, mode, { R: 3 }), 0);
    assert.deepEqual([...aggLossWeights(empty, mode, { R: 3 })], [0, 0, 0, 0, 0, 0]);
  }
});

Deno.test("aggLoss loop form equals the weighted-sum form and its FD gradient", () => {
  const r = rng(11), R = 5, B = 4;
  const x = new Float64Array(B * R).map(() => r() * 4 - 2);
  const mask = new Float32Array(B * R).map(() => (r() < 0.6 ? 1 : 0));
  mask.fill(0, R, 2 * R);
  for (const mode of LOSS_AGG_MODES) {
    const w = aggLossWeights(mask, mode, { R });
    let weighted = 0;
    for (let i = 0; i < x.length; i++) weighted += w[i] * x[i];
    assertClose(aggLoss(x, mask, mode, { R }), weighted, 1e-12, mode);
    assertClose(w, finiteDiff((v) => aggLoss(v, mask, mode, { R }), x), 1e-7, mode);
  }
});

Deno.test("unknown loss_agg_mode lists valid modes", () => {
  assert.throws(
    () => aggLoss(L, M, "seq-sum", { R: 3 }),
    /unknown loss_agg_mode "seq-sum"; valid names: token-mean, seq-mean-token-sum, /,
  );
});
