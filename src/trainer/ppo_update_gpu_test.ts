/**
 * One updateActor / updateCritic call with the losses on the GPU against the former path (loss on
 * the CPU with src/algos' references, test_cpu_loss_update.ts) on the same tiny model and batch:
 * the same parameters after the update, the same metrics, and one readback per mini-batch.
 */
import assert from "node:assert/strict";
import { gpu } from "../gpu/mod.ts";
import { CausalLM, Critic, TINY_QWEN2, tinyModelConfig, tinyWeights } from "../nn/mod.ts";
import { assertClose, gpuTest, leftPadded, randomArray, rng } from "../testing/mod.ts";
import type { Tensor } from "../tensor/mod.ts";
import { type ActorUpdateOptions, computeLogProbs, updateActor } from "./actor.ts";
import type { AdvBatch } from "./batch.ts";
import { makeOptimizer } from "./build.ts";
import { type CriticUpdateOptions, updateCritic, type ValueModel } from "./critic.ts";
import { updateActorCpuLoss, updateCriticCpuLoss } from "./test_cpu_loss_update.ts";
import { bareSamples } from "./test_batches.ts";

const config = tinyModelConfig(TINY_QWEN2);
const B = 6, P = 5, R = 4;
// AdamW divides by sqrt(v) + eps: with the usual eps of 1e-8, a gradient element near 0 (a
// weight that barely matters) turns f32 rounding noise into a step of up to lr, in either
// direction. A larger eps keeps the comparison about the gradients; the gradients themselves agree
// to f32 rounding (ppo_micro_loss_test.ts checks the loss gradients against the references).
const OPTIM = { lr: 1e-2, betas: [0.9, 0.999], weight_decay: 0.01, eps: 1e-4 };

/** Ragged responses: lengths 4, 2, 0 (all padding), 3, 1 and a hole (a tool token) in row 5. */
const RESPONSE_MASK = Int32Array.from([
  ...[1, 1, 1, 1],
  ...[1, 1, 0, 0],
  ...[0, 0, 0, 0],
  ...[1, 1, 1, 0],
  ...[1, 0, 0, 0],
  ...[1, 0, 1, 1],
]);

async function makeBatch(actor: CausalLM): Promise<AdvBatch> {
  const { ids, mask } = leftPadded(B, P, [0, 2, 1, 0, 3, 1], config.vocabSize, 11);
  const r = rng(12);
  const responses = RESPONSE_MASK.map((m) => m ? 3 + Math.floor(r() * (config.vocabSize - 3)) : 0);
  const pad = (x: Float32Array) => x.map((v, i) => RESPONSE_MASK[i] ? v : NaN); // must not leak
  const gen = {
    ...bareSamples(B, P, R),
    prompts: ids,
    promptMask: mask,
    responses,
    responseMask: RESPONSE_MASK,
  };
  // old log-probs near the current ones, so that ratios fall on both sides of the clip range
  const { logProbs } = await computeLogProbs(actor, gen, { microBatchSize: 4, withEntropy: false });
  const noise = randomArray(B * R, 13, -0.4, 0.4);
  return {
    ...gen,
    tokenLevelScores: new Float32Array(B * R),
    responseTexts: [],
    rewardExtraInfo: {},
    oldLogProbs: pad(logProbs.map((v, i) => v + noise[i])),
    entropys: undefined,
    sumPiSquared: undefined,
    refLogProbs: pad(logProbs.map((v, i) => v - noise[(i * 5) % (B * R)])),
    values: pad(randomArray(B * R, 14, -1, 1)),
    tokenLevelRewards: new Float32Array(B * R),
    advantages: pad(randomArray(B * R, 15, -2, 2)),
    returns: pad(randomArray(B * R, 16, -2, 2)),
  };
}

/** Counts GPU readbacks while `fn` runs. */
async function countReads<T>(fn: () => Promise<T>): Promise<{ value: T; reads: number }> {
  const g = gpu(), read = g.read;
  let reads = 0;
  g.read = (ranges) => (reads++, read.call(g, ranges));
  try {
    return { value: await fn(), reads };
  } finally {
    g.read = read;
  }
}

/** The two models' parameters agree, and the update moved them away from `start`. */
async function assertSameParams(
  a: Map<string, Tensor>,
  b: Map<string, Tensor>,
  start: Map<string, Float32Array>,
) {
  assert.deepEqual([...a.keys()].sort(), [...start.keys()].sort());
  let moved = 0;
  for (const [name, t] of a) {
    const x = await t.toArray(), y = await b.get(name)!.toArray(), x0 = start.get(name)!;
    assertClose(x, y, { atol: 2e-6, rtol: 1e-4, label: name });
    x.forEach((v, i) => (moved = Math.max(moved, Math.abs(v - x0[i]))));
  }
  assert.ok(moved > 1e-3, `the update moved the parameters (max change ${moved})`);
}

function assertSameMetrics(gpuM: Record<string, number>, cpuM: Record<string, number>) {
  assert.deepEqual(Object.keys(gpuM).sort(), Object.keys(cpuM).sort());
  for (const k of Object.keys(cpuM)) assertClose([gpuM[k]], [cpuM[k]], { label: k });
}

const ACTOR_CASES: {
  label: string;
  o: Partial<ActorUpdateOptions>;
  loss: Partial<ActorUpdateOptions["loss"]>;
}[] = [
  {
    label: "vanilla token-mean, entropy bonus, KL loss, 2 epochs, shuffled",
    o: { ppoEpochs: 2, miniBatchSize: 4, microBatchSize: 2, shuffle: true },
    loss: { policyLoss: "vanilla", lossAggMode: "token-mean", entropyCoeff: 0.01, useKlLoss: true },
  },
  {
    label: "gspo seq-mean-token-sum-norm, no entropy, no KL",
    o: { ppoEpochs: 1, miniBatchSize: 6, microBatchSize: 4, shuffle: false },
    loss: {
      policyLoss: "gspo",
      lossAggMode: "seq-mean-token-sum-norm",
      entropyCoeff: 0,
      useKlLoss: false,
    },
  },
  {
    label: "vanilla seq-mean-token-sum-norm, calculate_entropy (no bonus), loss_scale_factor 3",
    o: { ppoEpochs: 1, miniBatchSize: 6, microBatchSize: 3, shuffle: false },
    loss: {
      policyLoss: "vanilla",
      lossAggMode: "seq-mean-token-sum-norm",
      entropyCoeff: 0,
      calculateEntropy: true,
      lossScaleFactor: 3,
      useKlLoss: false,
    },
  },
  {
    label: "vanilla seq-mean-token-mean, KL (k1), 3 micro-batches",
    o: { ppoEpochs: 1, miniBatchSize: 6, microBatchSize: 2, shuffle: true },
    loss: {
      policyLoss: "vanilla",
      lossAggMode: "seq-mean-token-mean",
      useKlLoss: true,
      klLossType: "kl",
      entropyCoeff: 0,
    },
  },
  {
    label: "clip_cov token-mean, 2 epochs of 3 micro-batches (a seed each)",
    o: { ppoEpochs: 2, miniBatchSize: 6, microBatchSize: 2, shuffle: true },
    loss: { policyLoss: "clip_cov", lossAggMode: "token-mean", entropyCoeff: 0, useKlLoss: false },
  },
  {
    label: "kl_cov seq-mean-token-sum, entropy bonus",
    o: { ppoEpochs: 1, miniBatchSize: 4, microBatchSize: 2, shuffle: false },
    loss: { policyLoss: "kl_cov", lossAggMode: "seq-mean-token-sum", entropyCoeff: 0.01 },
  },
  {
    label: "geo_mean, a micro-batch holding the all-padding row",
    o: { ppoEpochs: 1, miniBatchSize: 6, microBatchSize: 3, shuffle: false },
    loss: { policyLoss: "geo_mean", useKlLoss: true },
  },
];

gpuTest(
  "updateActor with GPU losses reproduces the CPU-loss update: parameters, metrics",
  async () => {
    const weights = tinyWeights(config, { seed: 5, std: 0.1 });
    for (const c of ACTOR_CASES) {
      const models = [0, 1].map(() => CausalLM.fromTensors(config, weights));
      const opts = models.map((m) => makeOptimizer(m.params(), OPTIM));
      const batch = await makeBatch(models[0]);
      const o: ActorUpdateOptions = {
        ppoEpochs: 1,
        miniBatchSize: 6,
        microBatchSize: 2,
        shuffle: true,
        seed: 3,
        step: 2,
        lr: OPTIM.lr,
        gradClip: 1,
        temperature: 0.9,
        ...c.o,
        loss: {
          policyLoss: "vanilla",
          clipRatio: 0.2,
          clipRatioLow: 0.2,
          clipRatioHigh: 0.28,
          clipRatioC: 3,
          lossAggMode: "token-mean",
          entropyCoeff: 0,
          useKlLoss: false,
          klLossCoef: 0.05,
          klLossType: "low_var_kl",
          tauPos: 1,
          tauNeg: 1.05,
          clipCovRatio: 0.2,
          clipCovLb: -3,
          clipCovUb: 3,
          klCovRatio: 0.2,
          ppoKlCoef: 0.3,
          ...c.loss,
        },
      };
      const minis = o.ppoEpochs * Math.ceil(B / o.miniBatchSize);
      const { value: gpuM, reads } = await countReads(() =>
        updateActor(models[0], opts[0], batch, o)
      );
      assert.equal(reads, minis, `${c.label}: one readback per mini-batch`);
      const cpuM = await updateActorCpuLoss(models[1], opts[1], batch, o);
      assertSameMetrics(gpuM, cpuM);
      const entropy = (c.loss.entropyCoeff ?? 0) !== 0 || c.loss.calculateEntropy === true;
      assert.equal("actor/entropy" in gpuM, entropy, `${c.label}: actor/entropy reported`);
      const clipfrac = gpuM["actor/pg_clipfrac"] ?? 1; // kl_cov reports none
      assert.ok(clipfrac > 0, `${c.label}: the clip was active`);
      await assertSameParams(models[0].params(), models[1].params(), weights);
    }
  },
);

gpuTest("updateCritic with the GPU value loss reproduces the CPU-loss update", async () => {
  const weights = tinyWeights(config, { seed: 6, std: 0.1, critic: true });
  const batch = await makeBatch(CausalLM.fromTensors(config, tinyWeights(config, { seed: 5 })));
  for (const lossAggMode of ["token-mean", "seq-mean-token-sum"] as const) {
    const nets = [0, 1].map(() => Critic.fromTensors(config, weights));
    const models: ValueModel[] = nets.map((net) => ({
      forward: (ids, f) => net.values(ids, f),
      params: () => net.params(),
      toArrays: () => net.toArrays(),
    }));
    const opts = nets.map((n) => makeOptimizer(n.params(), OPTIM));
    const o: CriticUpdateOptions = {
      ppoEpochs: 2,
      miniBatchSize: 4,
      microBatchSize: 3,
      shuffle: true,
      seed: 4,
      step: 1,
      lr: OPTIM.lr,
      gradClip: 1,
      cliprangeValue: 0.2,
      lossAggMode,
    };
    const { value: gpuM, reads } = await countReads(() =>
      updateCritic(models[0], opts[0], batch, o)
    );
    assert.equal(reads, 4, "one readback per mini-batch");
    const cpuM = await updateCriticCpuLoss(models[1], opts[1], batch, o);
    assertSameMetrics(gpuM, cpuM);
    assert.ok(gpuM["critic/vf_clipfrac"] > 0, "the value clip was active");
    await assertSameParams(nets[0].params(), nets[1].params(), weights);
  }
});
