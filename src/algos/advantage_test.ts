import assert from "node:assert/strict";
import { ADV_ESTIMATORS, computeAdvantage, gaeScan, gaeScanReference } from "./mod.ts";
import { groupStats, groupStatsReference } from "./group.ts";
import { assertClose, assertFinite, rng } from "./test_util.ts";

const f32 = (xs: number[]) => new Float32Array(xs);
const f64 = (xs: number[]) => new Float64Array(xs);

Deno.test("gae: hand-computed scan skips a tool-output token; all-padding row stays finite", () => {
  // Row 0: mask [1,0,1,1], rewards [0,0,0,1], values [0.5, 9, 0.5, 0.5]; γ = λ = 0.5 (γλ = 0.25)
  //  t=3: δ = 1 + 0.5·0 - 0.5 = 0.5            A3 = 0.5
  //  t=2: δ = 0 + 0.5·0.5 - 0.5 = -0.25        A2 = -0.25 + 0.25·0.5 = -0.125
  //  t=1: masked -> carries A = -0.125, V_next stays 0.5 (V1 = 9 is never used)
  //  t=0: δ = 0 + 0.5·0.5 - 0.5 = -0.25        A0 = -0.25 + 0.25·(-0.125) = -0.28125
  //  returns = A + V = [0.21875, 8.875, 0.375, 1]
  // Row 1: all padding, values 1 -> A = 0, returns = 1.
  const inputs = {
    R: 4,
    tokenLevelRewards: f64([0, 0, 0, 1, 0, 0, 0, 0]),
    values: f64([0.5, 9, 0.5, 0.5, 1, 1, 1, 1]),
    responseMask: f32([1, 0, 1, 1, 0, 0, 0, 0]),
  };
  const scan = gaeScan(inputs.tokenLevelRewards, inputs.values, inputs.responseMask, 4, {
    gamma: 0.5,
    lam: 0.5,
  });
  assertClose(scan.advantages, [-0.28125, -0.125, -0.125, 0.5, 0, 0, 0, 0]);
  assertClose(scan.returns, [0.21875, 8.875, 0.375, 1, 1, 1, 1, 1]);

  // Whitening over the valid [-0.28125, -0.125, 0.5]: mean = 0.09375/3 = 0.03125,
  // deviations [-0.3125, -0.15625, 0.46875], squares sum 0.341796875, unbiased var = /2
  // = 0.1708984375. Every element (masked ones too, as verl) becomes (A - 0.03125)/sqrt(var+1e-8).
  const { advantages, returns } = computeAdvantage("gae", inputs, { gamma: 0.5, lam: 0.5 });
  const sd = Math.sqrt(0.1708984375 + 1e-8);
  const w = (a: number) => (a - 0.03125) / sd;
  assertClose(advantages, [-0.28125, -0.125, -0.125, 0.5, 0, 0, 0, 0].map(w));
  assertClose(returns, [0.21875, 8.875, 0.375, 1, 1, 1, 1, 1]);
  assertFinite(advantages);
});

Deno.test("gae: per-row scan equals verl's column-order loop on random masked data", () => {
  const r = rng(7), B = 5, R = 9;
  const rewards = new Float64Array(B * R).map(() => r() * 2 - 1);
  const values = new Float64Array(B * R).map(() => r());
  const mask = new Float32Array(B * R).map(() => (r() < 0.7 ? 1 : 0));
  mask.fill(0, 2 * R, 3 * R); // one all-padding row
  const o = { gamma: 0.97, lam: 0.9 };
  const a = gaeScan(rewards, values, mask, R, o), b = gaeScanReference(rewards, values, mask, R, o);
  assertClose(a.advantages, b.advantages, 1e-12);
  assertClose(a.returns, b.returns, 1e-12);
});

// Shared outcome batch (R = 3). Score = row sum of token rewards.
//  a0 [0,0,1]   mask [1,1,1]  s=1    a1 [0,0,0]   mask [1,0,1] s=0   a2 [0,.5,0] mask [1,1,0] s=0.5
//  b0 [0,0,2]   mask [1,1,1]  s=2    (group of one)
//  c0 [0,1,0]   mask [1,1,0]  s=1    c1 all padding, s=0
//  d0 [0,0,1]   mask [1,1,1]  s=1    d1 [0,1,0]  mask [1,1,0]  s=1  (equal rewards)
const outcomeInputs = {
  R: 3,
  tokenLevelRewards: f32([0, 0, 1, 0, 0, 0, 0, .5, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0]),
  responseMask: f32([1, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0]),
  uids: ["a", "a", "a", "b", "c", "c", "d", "d"],
};
const maskRows = [[1, 1, 1], [1, 0, 1], [1, 1, 0], [1, 1, 1], [1, 1, 0], [0, 0, 0], [1, 1, 1], [
  1,
  1,
  0,
]];
const broadcast = (scalars: number[]) => scalars.flatMap((s, b) => maskRows[b].map((m) => s * m));

Deno.test("grpo: group z-scores, group of one, equal rewards, padding row", () => {
  // a: mean 0.5, deviations [.5,-.5,0], unbiased var 0.5/2 = 0.25, std 0.5 -> ±0.5/(0.5+1e-6)
  // b: group of one -> mean 0, std 1 -> 2/(1+1e-6)
  // c: mean 0.5, std sqrt(0.5) -> c0 = 0.5/(sqrt(.5)+1e-6); c1 all padding -> 0 tokens
  // d: equal rewards -> std 0 -> 0/(0+1e-6) = 0
  const { advantages, returns } = computeAdvantage("grpo", outcomeInputs);
  const eps = 1e-6, h = 0.5 / (0.5 + eps), c = 0.5 / (Math.sqrt(0.5) + eps);
  const expected = broadcast([h, -h, 0, 2 / (1 + eps), c, -c, 0, 0]);
  assertClose(advantages, expected, 1e-6);
  assert.strictEqual(advantages, returns);
  assertFinite(advantages);
});

Deno.test("grpo with norm_adv_by_std_in_grpo=false (Dr.GRPO) only subtracts the mean", () => {
  const { advantages } = computeAdvantage("grpo", outcomeInputs, { normAdvByStdInGrpo: false });
  assertClose(advantages, broadcast([0.5, -0.5, 0, 2, 0.5, -0.5, 0, 0]));
});

Deno.test("rloo: leave-one-out baseline; a group of one keeps its score", () => {
  // a: n=3, a_i = 3/2·(s_i - 0.5) = [0.75, -0.75, 0]   (1 - mean(0, .5) = 0.75 ✓)
  // b: 2.  c: n=2 -> 2·(s - 0.5) = [1, -1].  d: [0, 0]
  const { advantages } = computeAdvantage("rloo", outcomeInputs);
  assertClose(advantages, broadcast([0.75, -0.75, 0, 2, 1, -1, 0, 0]));
});

Deno.test("opo: length-weighted baseline", () => {
  // a: lengths [3,2,2], bsl = (3·1 + 2·0 + 2·0.5)/7 = 4/7 -> [3/7, -4/7, 0.5 - 4/7 = -1/14]
  // b: group of one -> 2.  c: lengths [2,0], bsl = (2·1 + 0)/2 = 1 -> [0, -1 (masked)]
  // d: lengths [3,2], bsl = (3 + 2)/5 = 1 -> [0, 0]
  const { advantages } = computeAdvantage("opo", outcomeInputs);
  assertClose(advantages, broadcast([3 / 7, -4 / 7, -1 / 14, 2, 0, -1, 0, 0]));
});

Deno.test("gpg: α = B / #nonzero scores times the group-centred score", () => {
  // scores [1,0,.5,2,1,0,1,1]: 6 non-zero of B = 8 -> α = 4/3
  // a: 4/3·[.5,-.5,0]; b: 4/3·(2-0); c: 4/3·[.5,-.5]; d: 0
  const { advantages } = computeAdvantage("gpg", outcomeInputs);
  const k = 4 / 3;
  assertClose(advantages, broadcast([k * .5, -k * .5, 0, k * 2, k * .5, -k * .5, 0, 0]));
});

Deno.test("reinforce_plus_plus_baseline: centred score whitened over valid tokens", () => {
  // uids [x,x], row0 [0,1] mask [1,1] s=1; row1 [0,0] mask [1,0] s=0; mean 0.5
  // tokens: [.5,.5 | -.5, 0(masked)]; valid mean = 0.5/3 = 1/6, deviations [1/3,1/3,-2/3],
  // squares sum 2/3, unbiased var 1/3 -> [1/3, 1/3, -2/3] / sqrt(1/3 + 1e-8), masked -> 0
  const { advantages } = computeAdvantage("reinforce_plus_plus_baseline", {
    R: 2,
    tokenLevelRewards: f32([0, 1, 0, 0]),
    responseMask: f32([1, 1, 1, 0]),
    uids: ["x", "x"],
  });
  const sd = Math.sqrt(1 / 3 + 1e-8);
  assertClose(advantages, [1 / 3 / sd, 1 / 3 / sd, -2 / 3 / sd, 0], 1e-6);
});

Deno.test("reinforce_plus_plus: discounted return resets after a masked token", () => {
  // row0 r [1,0,0,2] mask [1,0,1,1], γ = 0.5:
  //  t3: G = 2; t2: G = 0 + .5·2 = 1; t1: G = 0 + .5·1 = 0.5, masked -> running reset to 0;
  //  t0: G = 1 + .5·0 = 1.  returns [1, .5, 1, 2]; row1 all padding -> 0.
  // advantages: whiten valid [1,1,2]: mean 4/3, deviations [-1/3,-1/3,2/3], var (2/3)/2 = 1/3
  const { advantages, returns } = computeAdvantage("reinforce_plus_plus", {
    R: 4,
    tokenLevelRewards: f32([1, 0, 0, 2, 0, 0, 0, 0]),
    responseMask: f32([1, 0, 1, 1, 0, 0, 0, 0]),
  }, { gamma: 0.5 });
  assertClose(returns, [1, 0.5, 1, 2, 0, 0, 0, 0]);
  const sd = Math.sqrt(1 / 3 + 1e-8);
  assertClose(advantages, [-1 / 3 / sd, 0, -1 / 3 / sd, 2 / 3 / sd, 0, 0, 0, 0], 1e-6);
});

Deno.test("remax: reward-to-go minus the greedy baseline on valid tokens", () => {
  // row0 r [1,0,0,2] mask [1,0,1,1], baseline 1.5: G = [3,2,2,2]; A = G - 1.5·m = [1.5,2,.5,.5]
  // row1 all padding, baseline 7: G = 0, A = 0.
  const { advantages, returns } = computeAdvantage("remax", {
    R: 4,
    tokenLevelRewards: f32([1, 0, 0, 2, 0, 0, 0, 0]),
    responseMask: f32([1, 0, 1, 1, 0, 0, 0, 0]),
    rewardBaselines: f32([1.5, 7]),
  });
  assertClose(returns, [3, 2, 2, 2, 0, 0, 0, 0]);
  assertClose(advantages, [1.5, 2, 0.5, 0.5, 0, 0, 0, 0]);
});

Deno.test("group statistics: single-pass form equals the dict-of-lists reference", () => {
  const r = rng(3), B = 40;
  const scores = new Float64Array(B).map(() => Math.round(r() * 4) / 2);
  const uids = Array.from({ length: B }, () => `u${Math.floor(r() * 9)}`);
  const a = groupStats(scores, uids), b = groupStatsReference(scores, uids);
  assertClose(a.mean, b.mean, 1e-12);
  assertClose(a.std, b.std, 1e-12);
  assertClose(a.size, b.size, 0);
});

Deno.test("unknown estimator and missing inputs are errors naming what is valid/needed", () => {
  assert.throws(
    () => computeAdvantage("grpoo", outcomeInputs),
    (e: Error) => e.message.includes('"grpoo"') && e.message.includes("gae, grpo, reinforce"),
  );
  // verl's AdvantageEstimator enum, every member
  assert.deepEqual(ADV_ESTIMATORS.names().sort(), [
    "gae",
    "gpg",
    "grpo",
    "grpo_passk",
    "grpo_vectorized",
    "opo",
    "optimal_token_baseline",
    "reinforce_plus_plus",
    "reinforce_plus_plus_baseline",
    "remax",
    "rloo",
    "rloo_vectorized",
    "tir_optimal_token_baseline",
  ]);
  assert.throws(() => computeAdvantage("gae", { ...outcomeInputs }), /needs values/);
  assert.throws(() => computeAdvantage("grpo", { ...outcomeInputs, uids: undefined }), /uids/);
  assert.throws(() => computeAdvantage("remax", outcomeInputs), /rewardBaselines/);
  assert.throws(
    () => computeAdvantage("optimal_token_baseline", outcomeInputs),
    /needs oldLogProbs/,
  );
  assert.throws(
    () => computeAdvantage("grpo", { ...outcomeInputs, uids: ["a", "b"] }),
    /uids has length 2, expected B = 8/,
  );
});
