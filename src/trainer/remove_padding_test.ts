/**
 * use_remove_padding in the trainer: the actor's and the critic's passes with packed micro-batches
 * give the padded passes' log-probs, entropies and values, and a PPO update the same weights; the
 * models saw packings (so the packed path ran); the config keys pick it per pass.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../config/mod.ts";
import { CausalLM, Critic, TINY_QWEN2, tinyModelConfig, tinyWeights } from "../nn/mod.ts";
import { assertClose, gpuTest, leftPadded, randomArray, rng } from "../testing/mod.ts";
import type { Tensor } from "../tensor/mod.ts";
import {
  type ActorUpdateOptions,
  type CausalModel,
  computeLogProbs,
  updateActor,
} from "./actor.ts";
import type { AdvBatch } from "./batch.ts";
import { makeOptimizer } from "./build.ts";
import {
  computeValues,
  type CriticUpdateOptions,
  updateCritic,
  type ValueModel,
} from "./critic.ts";
import { microBatching } from "./util.ts";
import { bareSamples } from "./test_batches.ts";

const config = tinyModelConfig(TINY_QWEN2);
const B = 6, P = 5, R = 6;
const OPTIM = { lr: 1e-2, betas: [0.9, 0.999], weight_decay: 0.01, eps: 1e-4 };

/** Left-padded prompts; responses of lengths 6, 2, 0, 4, 1, 5 (random EOS), right-padded. */
function makeBatch(): AdvBatch {
  const { ids, mask } = leftPadded(B, P, [0, 2, 1, 0, 3, 1], config.vocabSize, 11);
  const lengths = [6, 2, 0, 4, 1, 5], r = rng(12);
  const responseMask = Int32Array.from(
    { length: B * R },
    (_, i) => i % R < lengths[~~(i / R)] ? 1 : 0,
  );
  const responses = responseMask.map((m) => m ? 3 + Math.floor(r() * (config.vocabSize - 3)) : 0);
  const pad = (x: Float32Array) => x.map((v, i) => responseMask[i] ? v : NaN); // must not leak
  const near = randomArray(B * R, 13, -3, -1);
  return {
    ...bareSamples(B, P, R),
    prompts: ids,
    promptMask: mask,
    responses,
    responseMask,
    tokenLevelScores: new Float32Array(B * R),
    responseTexts: [],
    rewardExtraInfo: {},
    oldLogProbs: pad(near),
    entropys: undefined,
    sumPiSquared: undefined,
    refLogProbs: pad(near.map((v, i) => v + 0.1 * Math.sin(i))),
    values: pad(randomArray(B * R, 14, -1, 1)),
    tokenLevelRewards: new Float32Array(B * R),
    advantages: pad(randomArray(B * R, 15, -2, 2)),
    returns: pad(randomArray(B * R, 16, -2, 2)),
  };
}

/** The model, recording the real-token count of every packed call (null: a padded call). */
function watched(model: CausalLM, calls: (number | null)[]): CausalModel {
  return {
    forward: (ids, o) => model.forward(ids, o),
    tokenLogProbs: (ids, o) => (calls.push(o.packing?.tokens ?? null), model.tokenLogProbs(ids, o)),
    params: () => model.params(),
    toArrays: () => model.toArrays(),
  };
}

const response = (v: Float32Array, mask: Int32Array) => [...v].filter((_, i) => mask[i] !== 0);

/** The two runs' parameters agree, and the update moved them away from `start`. */
async function sameParams(
  a: Map<string, Tensor>,
  b: Map<string, Tensor>,
  start: Map<string, Float32Array>,
) {
  let moved = 0;
  for (const [name, t] of a) {
    const x = await t.toArray(), x0 = start.get(name)!;
    assertClose(x, await b.get(name)!.toArray(), { atol: 2e-6, rtol: 1e-4, label: name });
    x.forEach((v, i) => (moved = Math.max(moved, Math.abs(v - x0[i]))));
  }
  assert.ok(moved > 1e-3, `the update moved the parameters (max change ${moved})`);
}

gpuTest("use_remove_padding: the padded actor's log-probs, entropies and PPO update", async () => {
  const weights = tinyWeights(config, { seed: 5, std: 0.1 });
  const batch = makeBatch();
  const runs = [];
  for (const removePadding of [false, true]) {
    const net = CausalLM.fromTensors(config, weights);
    net.gradientCheckpointing = removePadding; // checkpointing must not change the packed result
    const calls: (number | null)[] = [];
    const model = watched(net, calls);
    const lp = await computeLogProbs(model, batch, {
      microBatchSize: 4,
      withEntropy: true,
      withSumPiSquared: true,
      removePadding,
    });
    const optimizer = makeOptimizer(net.params(), OPTIM);
    const o: ActorUpdateOptions = {
      ppoEpochs: 2,
      miniBatchSize: 6,
      microBatchSize: 2,
      maxTokenLen: 16, // use_dynamic_bsz: micro-batches by token budget
      removePadding,
      shuffle: true,
      seed: 3,
      step: 1,
      lr: OPTIM.lr,
      gradClip: 1,
      temperature: 0.9,
      loss: {
        policyLoss: "vanilla",
        clipRatio: 0.2,
        clipRatioLow: 0.2,
        clipRatioHigh: 0.28,
        clipRatioC: 3,
        lossAggMode: "token-mean",
        entropyCoeff: 0.01,
        useKlLoss: true,
        klLossCoef: 0.05,
        klLossType: "low_var_kl",
        tauPos: 1,
        tauNeg: 1.05,
        clipCovRatio: 0.2,
        clipCovLb: -3,
        clipCovUb: 3,
        klCovRatio: 0.2,
        ppoKlCoef: 0.3,
      },
    };
    const metrics = await updateActor(model, optimizer, batch, o);
    runs.push({ lp, metrics, calls, net });
  }
  const [padded, packed] = runs;
  for (const k of ["logProbs", "entropys", "sumPiSquared"] as const) {
    const [a, b] = [packed.lp[k]!, padded.lp[k]!].map((v) => response(v, batch.responseMask));
    assertClose(a, b, { atol: 1e-5, rtol: 1e-5, label: k });
  }
  for (const k of Object.keys(padded.metrics)) {
    assertClose([packed.metrics[k]], [padded.metrics[k]], { atol: 1e-5, rtol: 1e-4, label: k });
  }
  await sameParams(packed.net.params(), padded.net.params(), weights);
  // every pass of the packed run was packed, on fewer rows than the padded layout
  assert.ok(padded.calls.every((n) => n === null));
  assert.ok(packed.calls.length > 2 && packed.calls.every((n) => n !== null));
  const packedTokens = packed.calls.slice(0, 2).reduce((a, n) => a! + n!, 0);
  const real = [...batch.promptMask, ...batch.responseMask].reduce((a, m) => a + m, 0);
  assert.equal(packedTokens, real, "old_log_prob packs exactly the real tokens");
  assert.ok(real < B * (P + R));
});

gpuTest("use_remove_padding: the padded critic's values and update", async () => {
  const weights = tinyWeights(config, { seed: 6, std: 0.1, critic: true });
  const batch = makeBatch();
  const runs = [];
  for (const removePadding of [false, true]) {
    const net = Critic.fromTensors(config, weights);
    const calls: (number | null)[] = [];
    const model: ValueModel = {
      forward: (ids, f) => (calls.push(f.packing?.tokens ?? null), net.values(ids, f)),
      params: () => net.params(),
      toArrays: () => net.toArrays(),
    };
    const values = await computeValues(model, batch, { microBatchSize: 4, removePadding });
    const o: CriticUpdateOptions = {
      ppoEpochs: 2,
      miniBatchSize: 4,
      microBatchSize: 3,
      removePadding,
      shuffle: true,
      seed: 4,
      step: 1,
      lr: OPTIM.lr,
      gradClip: 1,
      cliprangeValue: 0.2,
      lossAggMode: "token-mean",
    };
    const metrics = await updateCritic(model, makeOptimizer(net.params(), OPTIM), batch, o);
    runs.push({ values, metrics, calls, net });
  }
  const [padded, packed] = runs;
  assertClose(
    response(packed.values, batch.responseMask),
    response(padded.values, batch.responseMask),
    { atol: 1e-5, rtol: 1e-5, label: "values" },
  );
  for (const k of Object.keys(padded.metrics)) {
    assertClose([packed.metrics[k]], [padded.metrics[k]], { atol: 1e-5, rtol: 1e-4, label: k });
  }
  await sameParams(packed.net.params(), padded.net.params(), weights);
  assert.ok(padded.calls.every((n) => n === null));
  assert.ok(packed.calls.length > 2 && packed.calls.every((n) => n !== null && n < 4 * (P + R)));
});

Deno.test("use_remove_padding: accepted, and picked per pass from its model's key", () => {
  const load = (...overrides: string[]) =>
    loadConfig("ppo_trainer", { overrides, skipPathChecks: true });
  const off = load();
  for (const pass of ["actor", "ref", "rollout", "critic", "values"] as const) {
    assert.equal(microBatching(off, pass).removePadding, false, pass);
  }
  const actor = load("actor_rollout_ref.model.use_remove_padding=true");
  const critic = load("critic.model.use_remove_padding=true");
  for (const pass of ["actor", "ref", "rollout"] as const) {
    assert.equal(microBatching(actor, pass).removePadding, true, pass);
    assert.equal(microBatching(critic, pass).removePadding, false, pass);
  }
  for (const pass of ["critic", "values"] as const) {
    assert.equal(microBatching(actor, pass).removePadding, false, pass);
    assert.equal(microBatching(critic, pass).removePadding, true, pass);
  }
});
