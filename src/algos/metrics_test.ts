import assert from "node:assert/strict";
import { approxKl, computeDataMetrics, explainedVariance, rolloutProbsDiff } from "./metrics.ts";
import { assertClose } from "./test_util.ts";

// B = 3, P = 2, R = 3.
//  row0: prompt [0,1] (len 1), response attn [1,1,1] (len 3 = R), policy mask [1,0,1] (tool token)
//  row1: prompt [1,1] (len 2 = P), response attn [1,1,0] (len 2), policy mask [1,1,0]
//  row2: prompt [1,1], response attn [0,0,0] -> aborted (excluded from score/reward stats)
const batch = {
  R: 3,
  attentionMask: new Float32Array([0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 0, 0]),
  responseMask: new Float32Array([1, 0, 1, 1, 1, 0, 0, 0, 0]),
  tokenLevelScores: new Float32Array([0, 0, 1, 0, 0.5, 0, 0, 0, 9]),
  tokenLevelRewards: new Float32Array([-0.1, 0, 0.9, 0, 0.4, 0, 0, 0, 9]),
  advantages: new Float32Array([1, 100, 2, 3, 4, 100, 100, 100, 100]),
  returns: new Float32Array([2, 100, 4, 6, 8, 100, 100, 100, 100]),
  values: new Float32Array([1.5, -50, 3, 5, 8.5, 50, 50, 50, 50]),
};

Deno.test("computeDataMetrics: hand-computed verl metrics", () => {
  const m = computeDataMetrics(batch);
  const expected: Record<string, number> = {
    // live scores [1, 0.5]; rewards [-0.1+0.9 = 0.8, 0.4]
    "critic/score/mean": 0.75,
    "critic/score/max": 1,
    "critic/score/min": 0.5,
    "critic/rewards/mean": 0.6,
    "critic/rewards/max": 0.8,
    "critic/rewards/min": 0.4,
    // valid tokens only: advantages [1,2,3,4], returns [2,4,6,8], values [1.5,3,5,8.5]
    "critic/advantages/mean": 2.5,
    "critic/advantages/max": 4,
    "critic/advantages/min": 1,
    "critic/returns/mean": 5,
    "critic/returns/max": 8,
    "critic/returns/min": 2,
    "critic/values/mean": 4.5,
    "critic/values/max": 8.5,
    "critic/values/min": 1.5,
    // ret - val = [.5,1,1,-.5]: mean .5, squares of deviations 0+.25+.25+1 = 1.5, var 0.5;
    // var(ret) = (9+1+1+9)/3 = 20/3 -> 1 - 0.5/(20/3 + 1e-5)
    "critic/vf_explained_var": 1 - 0.5 / (20 / 3 + 1e-5),
    // response lengths from the attention mask: [3, 2, 0]
    "response_length/mean": 5 / 3,
    "response_length/max": 3,
    "response_length/min": 0,
    "response_length/clip_ratio": 1 / 3,
    "response_length_non_aborted/mean": 2.5,
    "response_length_non_aborted/max": 3,
    "response_length_non_aborted/min": 2,
    "response_length_non_aborted/clip_ratio": 0.5,
    "response/aborted_ratio": 1 / 3,
    // prompt lengths [1, 2, 2], P = 2
    "prompt_length/mean": 5 / 3,
    "prompt_length/max": 2,
    "prompt_length/min": 1,
    "prompt_length/clip_ratio": 2 / 3,
  };
  assert.deepEqual(Object.keys(m).sort(), Object.keys(expected).sort());
  for (const [k, v] of Object.entries(expected)) assertClose(m[k], v, 1e-6, k);
});

Deno.test("computeDataMetrics without values omits critic value metrics; all aborted throws", () => {
  const m = computeDataMetrics({ ...batch, values: undefined });
  assert.equal(m["critic/values/mean"], undefined);
  assert.equal(m["critic/vf_explained_var"], undefined);
  assert.throws(
    () => computeDataMetrics({ ...batch, attentionMask: new Float32Array(15).fill(0) }),
    /aborted/,
  );
});

Deno.test("explainedVariance and approxKl", () => {
  const mask = new Float32Array([1, 1, 1, 0]);
  // perfect critic: Var(ret - val) = 0 -> 1
  assertClose(
    explainedVariance(new Float32Array([1, 2, 3, 9]), new Float32Array([1, 2, 3, 0]), mask),
    1,
  );
  assert.equal(
    explainedVariance(new Float32Array([1]), new Float32Array([0]), new Float32Array([1])),
    0,
  );
  // mean(old - logp) over valid: ((-1 - -1.5) + (-2 - -1.5) + 0)/3 = 0
  const lp = new Float32Array([-1.5, -1.5, -1, NaN]);
  assertClose(approxKl(lp, new Float32Array([-1, -2, -1, 0]), mask), 0);
});

Deno.test("rolloutProbsDiff: hand-computed over the response tokens only", () => {
  // probabilities: rollout [0.5, 0.2, 0.9 (masked), 0.1], recomputed [0.4, 0.2, 0.1, 0.4]
  const rollout = new Float32Array([0.5, 0.2, 0.9, 0.1].map(Math.log));
  const old = new Float32Array([0.4, 0.2, 0.1, 0.4].map(Math.log));
  const m = rolloutProbsDiff(rollout, old, new Float32Array([1, 1, 0, 1]));
  // |diff| = [0.1, 0, 0.3]: max 0.3, mean 0.4 / 3, unbiased std of the three
  const mean = 0.4 / 3;
  const std = Math.sqrt(((0.1 - mean) ** 2 + mean ** 2 + (0.3 - mean) ** 2) / 2);
  // pearson of a = [0.5, 0.2, 0.1] and b = [0.4, 0.2, 0.4]: means 0.8/3 and 1/3
  const da = [0.5, 0.2, 0.1].map((x) => x - 0.8 / 3), db = [0.4, 0.2, 0.4].map((x) => x - 1 / 3);
  const dot = (x: number[], y: number[]) => x.reduce((s, v, i) => s + v * y[i], 0);
  const corr = dot(da, db) / Math.sqrt(dot(da, da) * dot(db, db));
  assertClose(
    [
      m["training/rollout_probs_diff_max"]!,
      m["training/rollout_probs_diff_mean"]!,
      m["training/rollout_probs_diff_std"]!,
      m["training/rollout_actor_probs_pearson_corr"]!,
    ],
    [0.3, mean, std, corr],
    1e-6,
  );
  assert.deepEqual(rolloutProbsDiff(rollout, old, new Float32Array(4)), {});
});
