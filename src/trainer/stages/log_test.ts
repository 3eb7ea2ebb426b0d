import assert from "node:assert/strict";
import type { AdvBatch } from "../batch.ts";
import { dataMetrics } from "./log.ts";
import { bareSamples } from "../test_batches.ts";

/** Two responses of 4 tokens: one of 1 valid token, one of 3, with per-token entropies. */
function batch(): AdvBatch {
  const B = 2, P = 2, R = 4;
  const zeros = () => new Float32Array(B * R);
  return {
    ...bareSamples(B, P, R),
    prompts: new Int32Array(B * P).fill(5),
    promptMask: new Int32Array(B * P).fill(1),
    responses: new Int32Array(B * R).fill(7),
    responseMask: new Int32Array([1, 0, 0, 0, 1, 1, 1, 0]),
    tokenLevelScores: zeros(),
    responseTexts: [],
    rewardExtraInfo: {},
    oldLogProbs: zeros(),
    entropys: new Float32Array([4, 9, 9, 9, 1, 2, 3, 9]),
    sumPiSquared: undefined,
    refLogProbs: undefined,
    values: undefined,
    tokenLevelRewards: zeros(),
    advantages: zeros(),
    returns: zeros(),
  };
}

Deno.test("actor/entropy of the old-log-prob pass follows the actor's loss_agg_mode, as in verl", () => {
  const entropy = (lossAggMode: string, lossScaleFactor?: number) =>
    dataMetrics(batch(), { lossAggMode, lossScaleFactor })["actor/entropy"];
  assert.equal(entropy("token-mean"), (4 + 1 + 2 + 3) / 4);
  assert.equal(entropy("seq-mean-token-mean"), (4 / 1 + 6 / 3) / 2);
  assert.equal(entropy("seq-mean-token-sum"), (4 + 6) / 2);
  assert.equal(entropy("seq-mean-token-sum-norm"), (4 + 6) / 4); // divided by R
  assert.equal(entropy("seq-mean-token-sum-norm", 5), (4 + 6) / 5);
});
