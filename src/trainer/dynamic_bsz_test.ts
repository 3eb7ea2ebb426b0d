import assert from "node:assert/strict";
import { CausalLM, Critic, TINY_QWEN2, tinyModelConfig, tinyWeights } from "../nn/mod.ts";
import { assertClose, gpuTest, leftPadded, randomArray, rng } from "../testing/mod.ts";
import { type ActorUpdateOptions, computeLogProbs, updateActor } from "./actor.ts";
import type { AdvBatch } from "./batch.ts";
import { makeOptimizer } from "./build.ts";
import { computeValues, updateCritic, type ValueModel } from "./critic.ts";
import { microBatches, type MicroBatching, partitionByTokens, rowTokens } from "./dynamic_bsz.ts";
import { bareSamples } from "./test_batches.ts";

Deno.test("partitionByTokens: every row once, within the budget, heaviest group first", () => {
  const r = rng(3);
  for (let trial = 0; trial < 50; trial++) {
    const n = 1 + Math.floor(r() * 20), budget = 20 + Math.floor(r() * 60);
    const lengths = Array.from({ length: n }, () => 1 + Math.floor(r() * 20));
    const groups = partitionByTokens(lengths, budget);
    assert.deepEqual(groups.flat().sort((a, b) => a - b), [...lengths.keys()]);
    const sums = groups.map((g) => g.reduce((a, i) => a + lengths[i], 0));
    assert.ok(sums.every((s) => s <= budget), `${sums} > ${budget}`);
    const total = lengths.reduce((a, b) => a + b, 0);
    assert.ok(groups.length >= Math.ceil(total / budget));
    const work = groups.map((g) => g.reduce((a, i) => a + lengths[i] ** 2, 0));
    assert.deepEqual(work, [...work].sort((a, b) => b - a));
    for (const g of groups) assert.deepEqual(g, [...g].sort((a, b) => a - b));
  }
  // the bound k = ceil(total / budget) would overfill: [6, 6, 6] in 9 needs three groups
  assert.equal(partitionByTokens([6, 6, 6], 9).length, 3);
  assert.deepEqual(partitionByTokens([3, 4, 5], 100), [[0, 1, 2]]);
  assert.throws(() => partitionByTokens([3, 40], 10), /longer than the budget of 10/);
});

const config = tinyModelConfig(TINY_QWEN2);
const B = 6, P = 5, R = 4;
const RESPONSE_MASK = Int32Array.from([
  ...[1, 1, 1, 1],
  ...[1, 1, 0, 0],
  ...[0, 0, 0, 0],
  ...[1, 1, 1, 0],
  ...[1, 0, 0, 0],
  ...[1, 0, 1, 1],
]);

function makeBatch(): AdvBatch {
  const { ids, mask } = leftPadded(B, P, [0, 2, 1, 0, 3, 1], config.vocabSize, 11);
  const r = rng(12);
  const responses = RESPONSE_MASK.map((m) => m ? 3 + Math.floor(r() * (config.vocabSize - 3)) : 0);
  const f = (seed: number, lo = -1, hi = 1) => randomArray(B * R, seed, lo, hi);
  return {
    ...bareSamples(B, P, R),
    prompts: ids,
    promptMask: mask,
    responses,
    responseMask: RESPONSE_MASK,
    tokenLevelScores: new Float32Array(B * R),
    responseTexts: [],
    rewardExtraInfo: {},
    oldLogProbs: f(13, -4, -1),
    entropys: undefined,
    sumPiSquared: undefined,
    refLogProbs: f(14, -4, -1),
    values: f(15),
    tokenLevelRewards: new Float32Array(B * R),
    advantages: f(16, -2, 2),
    returns: f(17, -2, 2),
  };
}

// token counts per row: prompt 5,3,4,5,2,4 + response 4,2,0,3,1,3 = 9,5,4,8,3,7 (36 in all)
const DYNAMIC: MicroBatching = { microBatchSize: 1, maxTokenLen: 12, budgetKey: "test.budget" };

gpuTest("microBatches: the token budget groups rows; a budget below P + R is an error", () => {
  const b = makeBatch();
  assert.deepEqual(rowTokens(b, [0, 1, 2, 3, 4, 5]), [9, 5, 4, 8, 3, 7]);
  const groups = microBatches(b, [0, 1, 2, 3, 4, 5], DYNAMIC);
  assert.ok(groups.length >= 3 && groups.length < 6, JSON.stringify(groups));
  assert.deepEqual(microBatches(b, [5, 0, 1], { microBatchSize: 2 }), [[5, 0], [1]]);
  // verl's null micro-batch size: the budget alone decides.
  assert.deepEqual(
    microBatches(b, [0, 1, 2, 3, 4, 5], { ...DYNAMIC, microBatchSize: null }),
    groups,
  );
  assert.throws(() => microBatches(b, [0], { microBatchSize: null }), /no micro-batch size/);
  assert.throws(
    () => microBatches(b, [0], { microBatchSize: 1, maxTokenLen: 8, budgetKey: "x.max_tok" }),
    /x\.max_tok=8 is below the batch's padded sequence length 9/,
  );
});

const LOSS: ActorUpdateOptions["loss"] = {
  policyLoss: "vanilla",
  clipRatio: 0.2,
  clipRatioLow: 0.2,
  clipRatioHigh: 0.28,
  clipRatioC: 3,
  lossAggMode: "token-mean",
  entropyCoeff: 0.01,
  useKlLoss: true,
  klLossCoef: 0.1,
  klLossType: "low_var_kl",
  tauPos: 1,
  tauNeg: 1,
  clipCovRatio: 0.0002,
  clipCovLb: 1,
  clipCovUb: 5,
  klCovRatio: 0.0002,
  ppoKlCoef: 0.1,
};
const OPTIM = { lr: 1e-2, betas: [0.9, 0.999], weight_decay: 0.01, eps: 1e-4 };

gpuTest(
  "use_dynamic_bsz: log-probs, values and both updates equal the fixed micro-batches",
  async () => {
    const weights = tinyWeights(config, { seed: 5, init: "varied" });
    const criticWeights = tinyWeights(config, { seed: 6, init: "varied", critic: true });
    const runs = [];
    for (const mb of [{ microBatchSize: 2 }, DYNAMIC]) {
      const b = makeBatch();
      const actor = CausalLM.fromTensors(config, weights);
      const net = Critic.fromTensors(config, criticWeights);
      const critic: ValueModel = {
        forward: (ids, f) => net.values(ids, f),
        params: () => net.params(),
        toArrays: () => net.toArrays(),
      };
      const lp = await computeLogProbs(actor, b, { ...mb, withEntropy: true, temperature: 0.9 });
      const values = await computeValues(critic, b, mb);
      const common = {
        ppoEpochs: 2,
        miniBatchSize: 6,
        shuffle: true,
        seed: 3,
        step: 1,
        gradClip: 1,
      };
      for (
        const [loss, agg] of [["vanilla", "token-mean"], ["gspo", "seq-mean-token-mean"]] as const
      ) {
        await updateActor(actor, makeOptimizer(actor.params(), OPTIM), b, {
          ...mb,
          ...common,
          lr: OPTIM.lr,
          temperature: 0.9,
          loss: { ...LOSS, policyLoss: loss, lossAggMode: agg },
        });
      }
      await updateCritic(critic, makeOptimizer(critic.params(), OPTIM), b, {
        ...mb,
        ...common,
        lr: OPTIM.lr,
        cliprangeValue: 0.5,
        lossAggMode: "seq-mean-token-sum",
      });
      runs.push({ lp, values, actor: await actor.toArrays(), critic: await critic.toArrays() });
      actor.dispose();
      net.dispose();
    }
    const [fixed, dynamic] = runs;
    assertClose(dynamic.lp.logProbs, fixed.lp.logProbs, { atol: 1e-6, label: "log-probs" });
    assertClose(dynamic.lp.entropys!, fixed.lp.entropys!, { atol: 1e-6, label: "entropy" });
    assertClose(dynamic.values, fixed.values, { atol: 1e-6, label: "values" });
    let moved = 0;
    for (const [name, x] of fixed.actor) {
      assertClose(dynamic.actor.get(name)!, x, { atol: 2e-6, rtol: 1e-4, label: `actor ${name}` });
      x.forEach((v, i) => (moved = Math.max(moved, Math.abs(v - weights.get(name)![i]))));
    }
    assert.ok(moved > 1e-3, `the updates moved the actor (${moved})`);
    for (const [name, x] of fixed.critic) {
      assertClose(dynamic.critic.get(name)!, x, {
        atol: 2e-6,
        rtol: 1e-4,
        label: `critic ${name}`,
      });
    }
  },
);
