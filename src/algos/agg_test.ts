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
  // verl: torch.sum(seq_losses) / loss_mask.shape[-1] = (6 + 9) / 3 = 5 (no division by rows)
  assert.equal(aggLoss(L, M, "seq-mean-token-sum-norm", { R: 3 }), 5);
});

Deno.test("aggLoss: global denominators, dp scaling, horizon override", () => {
  assert.equal(aggLoss(L, M, "token-mean", { R: 3, batchNumTokens: 10 }), 1.5); // 15/10
  assert.equal(aggLoss(L, M, "token-mean", { R: 3, batchNumTokens: 10, dpSize: 2 }), 3); // ·2
  assert.equal(aggLoss(L, M, "seq-mean-token-sum", { R: 3, globalBatchSize: 4 }), 3.75); // 15/4
  assert.equal(aggLoss(L, M, "seq-mean-token-mean", { R: 3, globalBatchSize: 4 }), 1.625); // 6.5/4
  assert.equal(aggLoss(L, M, "seq-mean-token-sum-norm", { R: 3, lossScaleFactor: 5 }), 3); // 15/5
  assert.throws(() => aggLoss(L, M, "token-mean", { R: 3, dpSize: 2 }), /batchNumTokens/);
  assert.throws(() => aggLoss(L, M, "seq-mean-token-sum", { R: 3, dpSize: 2 }), /globalBatchSize/);
});

Deno.test("seq-mean-token-sum-norm ignores globalBatchSize and dpSize; micro-batches sum", () => {
  // verl's agg_loss reads only loss_scale_factor (default: the response-length dimension) here
  for (const o of [{ globalBatchSize: 7 }, { globalBatchSize: 4, dpSize: 2 }, { dpSize: 3 }]) {
    assert.equal(aggLoss(L, M, "seq-mean-token-sum-norm", { R: 3, ...o }), 5, JSON.stringify(o));
  }
  // micro-batches [row 0] and [rows 1, 2]: 6/3 + 9/3 = 5, the whole batch's value
  const first = aggLoss(L.subarray(0, 3), M.subarray(0, 3), "seq-mean-token-sum-norm", { R: 3 });
  const rest = aggLoss(L.subarray(3), M.subarray(3), "seq-mean-token-sum-norm", { R: 3 });
  assert.equal(first + rest, 5);
  // a longer padded length R = 6 with the same tokens halves the loss (H follows R)
  const L6 = new Float64Array([1, 2, 3, 0, 0, 0, 4, 100, 5, 0, 0, 0]);
  const M6 = new Float32Array([1, 1, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0]);
  assert.equal(aggLoss(L6, M6, "seq-mean-token-sum-norm", { R: 6 }), 2.5);
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
  // seq-mean-token-sum-norm: 1/H = 1/3 on every valid token
  const h = 1 / 3;
  assertClose(aggLossWeights(M, "seq-mean-token-sum-norm", { R: 3 }), [h, h, h, h, 0, h, 0, 0, 0]);
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
