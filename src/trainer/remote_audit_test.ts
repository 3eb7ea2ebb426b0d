/**
 * Bypass mode's worker check inside the actor update (LogProbAudit): a group whose rollout
 * log-probs lie is rejected before any optimizer step sees it. The weights after the audited
 * update equal those of an update that never had the group (its response mask zeroed), and differ
 * from an update that kept it (so the comparison would catch a leak); one audit readback per
 * mini-batch besides the optimizer's.
 */
import assert from "node:assert/strict";
import { gpu } from "../gpu/mod.ts";
import { CausalLM, TINY_QWEN2, tinyModelConfig, tinyWeights } from "../nn/mod.ts";
import { gpuTest, leftPadded, randomArray, rng } from "../testing/mod.ts";
import { type ActorUpdateOptions, computeLogProbs, updateActor } from "./actor.ts";
import type { AdvBatch, GenBatch } from "./batch.ts";
import { makeOptimizer } from "./build.ts";
import { loadConfig } from "../config/mod.ts";
import { actorLossOptions } from "./stages/update_actor.ts";
import { LogProbAudit, logProbDiff, RejectionTally } from "./remote_audit.ts";

const config = tinyModelConfig(TINY_QWEN2);
const B = 6, P = 5, R = 4;
const MASK = Int32Array.from([
  1,
  1,
  1,
  1,
  1,
  1,
  0,
  0,
  1,
  1,
  1,
  0,
  1,
  0,
  0,
  0,
  1,
  1,
  1,
  1,
  1,
  0,
  1,
  1,
]);
const UID = ["g0", "g0", "g1", "g1", "g2", "g2"];
const WORKER: Record<string, string> = { g0: "w0", g1: "liar", g2: "w0" };

async function makeBatch(model: CausalLM): Promise<AdvBatch> {
  const { ids, mask } = leftPadded(B, P, [0, 2, 1, 0, 3, 1], config.vocabSize, 21);
  const r = rng(22);
  const gen: GenBatch = {
    size: B,
    promptLength: P,
    responseLength: R,
    uid: UID,
    dataSource: Array(B).fill("t"),
    groundTruth: Array(B).fill(""),
    extraInfo: Array(B).fill({}),
    prompts: ids,
    promptMask: mask,
    responses: MASK.map((m) => m ? 3 + Math.floor(r() * (config.vocabSize - 3)) : 0),
    responseMask: MASK,
  };
  const { logProbs } = await computeLogProbs(model, gen, { microBatchSize: 4, withEntropy: false });
  // g1 (rows 2, 3) claims log-probs 1 nat above the policy's; the others are honest
  const rollout = logProbs.map((v, i) => (i >= 2 * R && i < 4 * R ? v + 1 : v));
  return {
    ...gen,
    rolloutLogProbs: rollout,
    tokenLevelScores: new Float32Array(B * R),
    responseTexts: Array(B).fill(""),
    rewardExtraInfo: {},
    oldLogProbs: rollout, // bypass mode
    entropys: undefined,
    sumPiSquared: undefined,
    refLogProbs: undefined,
    values: undefined,
    tokenLevelRewards: new Float32Array(B * R),
    advantages: randomArray(B * R, 23, -2, 2),
    returns: new Float32Array(B * R),
  };
}

const OPTIM = { lr: 1e-5, betas: [0.9, 0.999], weight_decay: 0.01 };
const OPTIONS: ActorUpdateOptions = {
  ppoEpochs: 2,
  miniBatchSize: 4,
  microBatchSize: 2,
  shuffle: true,
  seed: 3,
  step: 1,
  // small: an honest sample's log-probs move little between the update's optimizer steps
  lr: 1e-5,
  gradClip: 1,
  temperature: 1,
  loss: actorLossOptions(loadConfig("ppo_trainer", { skipPathChecks: true })),
};

async function params(m: CausalLM): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  for (const [, t] of [...m.params()].sort(([a], [b]) => a.localeCompare(b))) {
    out.push(await t.toArray() as Float32Array);
  }
  return out;
}

gpuTest(
  "a lying group is masked before any optimizer step: weights as if it never came",
  async () => {
    const weights = tinyWeights(config, { seed: 7, std: 0.1 });
    const models = [0, 1, 2].map(() => CausalLM.fromTensors(config, weights));
    const batch = await makeBatch(models[0]);
    const tally = new RejectionTally();
    const audit = new LogProbAudit(batch, { workerOf: (u) => WORKER[u], tolerance: 0.5, tally });
    const g = gpu(), read = g.read;
    let reads = 0;
    g.read = (ranges) => (reads++, read.call(g, ranges));
    try {
      await updateActor(models[0], makeOptimizer(models[0].params(), OPTIM), batch, {
        ...OPTIONS,
        audit,
      });
    } finally {
      g.read = read;
    }
    // 2 epochs x 2 mini-batches: the audit's readback and the optimizer's each
    assert.equal(reads, 8);
    const m = audit.metrics();
    assert.equal(m["distributed/rejected_groups"], 1);
    assert.equal(m["distributed/rejected/liar"], 1);
    assert.ok(!("distributed/rejected/w0" in m), "the honest worker's groups pass");
    assert.ok(m["distributed/logprob_diff/max"] >= 0.99, `${m["distributed/logprob_diff/max"]}`);

    const without = MASK.map((v, i) => (i >= 2 * R && i < 4 * R ? 0 : v));
    await updateActor(models[1], makeOptimizer(models[1].params(), OPTIM), {
      ...batch,
      responseMask: without,
    }, OPTIONS);
    await updateActor(models[2], makeOptimizer(models[2].params(), OPTIM), batch, OPTIONS);
    const [audited, masked, kept] = await Promise.all(models.map(params));
    audited.forEach((x, j) => assert.deepEqual(x, masked[j], `parameter ${j}`));
    assert.ok(audited.some((x, j) => x.some((v, i) => v !== kept[j][i])), "the lie had a gradient");
  },
);

Deno.test("logProbDiff: mean |rollout - trainer| over the response tokens; non-finite is Infinity", () => {
  const rollout = Float32Array.from([-1, -2, 9, -1, NaN, 0]);
  const mask = Int32Array.from([1, 1, 0, 1, 1, 0]);
  assert.equal(logProbDiff(rollout, mask, 3, 0, (r) => [-1.5, -1, 0][r]), 0.75);
  assert.equal(logProbDiff(rollout, mask, 3, 1, () => -1), Infinity);
  assert.equal(logProbDiff(rollout, new Int32Array(6), 3, 0, () => 5), 0);
});
