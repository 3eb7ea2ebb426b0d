/**
 * Qwen's 151,936-token vocabulary on a tiny trunk (hidden 32, one layer), on whatever adapter the
 * tests get (llvmpipe in CI: 128 MiB per binding). A micro-batch of 4 x 56 tokens has 130 MiB of
 * logits, more than one binding holds: the log-prob pass, the PPO update and SFT must run over
 * vocabulary chunks, and agree with the whole-vocabulary path where that one fits.
 */
import assert from "node:assert/strict";
import { gpu } from "../gpu/mod.ts";
import { CausalLM, tinyModelConfig, tinyWeights } from "../nn/mod.ts";
import { assertClose, gpuTest, leftPadded, randomArray, rng } from "../testing/mod.ts";
import { logprobEntropy, noGrad, scope } from "../tensor/mod.ts";
import { computeLogProbs, updateActor, uploadSequences } from "./actor.ts";
import type { AdvBatch } from "./batch.ts";
import { makeOptimizer } from "./build.ts";
import { loadConfig, type PpoConfig } from "../config/mod.ts";
import { actorLossOptions, keepLogitsBytes } from "./stages/update_actor.ts";
import { sftEvalLoss } from "./sft_trainer.ts";

const VOCAB = 151936;
const config = tinyModelConfig({
  hiddenSize: 32,
  intermediateSize: 44,
  numHiddenLayers: 1,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
  vocabSize: VOCAB,
  eosTokenId: VOCAB - 1,
  maxPositionEmbeddings: 256,
  tieWordEmbeddings: true,
});
const B = 4, P = 6, R = 50, T = P + R;

function batch(): AdvBatch {
  const { ids, mask } = leftPadded(B, P, [0, 2, 1, 3], VOCAB, 5);
  const r = rng(6);
  const responseMask = Int32Array.from(
    { length: B * R },
    (_, i) => (i % R) < R - 7 * (i / R | 0) ? 1 : 0,
  );
  const responses = responseMask.map((m) => m ? 3 + Math.floor(r() * (VOCAB - 3)) : 0);
  const zeros = () => new Float32Array(B * R);
  return {
    size: B,
    promptLength: P,
    responseLength: R,
    uid: ["a", "a", "b", "b"],
    dataSource: [],
    groundTruth: [],
    extraInfo: [],
    prompts: ids,
    promptMask: mask,
    responses,
    responseMask,
    tokenLevelScores: zeros(),
    responseTexts: [],
    rewardExtraInfo: {},
    oldLogProbs: zeros(),
    entropys: undefined,
    sumPiSquared: undefined,
    refLogProbs: undefined,
    values: undefined,
    tokenLevelRewards: zeros(),
    advantages: randomArray(B * R, 7, -1, 1),
    returns: zeros(),
  };
}

/** One PPO step of the whole batch as one micro-batch: the config's loss, an entropy bonus. */
function updateOnce(model: CausalLM, b: AdvBatch, cfg: PpoConfig, keepLogitsBytes = 0) {
  const optimizer = makeOptimizer(model.params(), {
    lr: 1e-3,
    betas: [0.9, 0.999],
    weight_decay: 0,
  });
  return updateActor(model, optimizer, b, {
    ppoEpochs: 1,
    miniBatchSize: B,
    microBatchSize: B,
    shuffle: false,
    lr: 1e-3,
    seed: 1,
    step: 1,
    gradClip: 1,
    temperature: 0.7,
    loss: { ...actorLossOptions(cfg), entropyCoeff: 0.01, klLossCoef: 0, tauNeg: 1 },
    keepLogitsBytes,
  });
}

gpuTest("a 151,936-token vocabulary: log-probs, the PPO update and SFT run in chunks", async () => {
  const logitsBytes = B * T * VOCAB * 4;
  assert.ok(logitsBytes > gpu().limits.maxStorageBufferBindingSize || !gpu().isCpuAdapter);
  const model = CausalLM.fromTensors(config, tinyWeights(config, { seed: 1 }));
  const b = batch();
  const { logProbs, entropys } = await computeLogProbs(model, b, {
    microBatchSize: B,
    withEntropy: true,
    temperature: 0.7,
  });
  // row 1 alone through the whole-vocabulary logits [1, T, V] (34 MiB) and logprobEntropy
  const whole = await scope(() =>
    noGrad(() => {
      const t = uploadSequences(b, [1]);
      const logits = model.forward(t.ids, { positionIds: t.pos, attentionMask: t.mask });
      const out = logprobEntropy(logits, t.targets, { withEntropy: true, temperature: 0.7 });
      return Promise.all([out.logProbs.toArray(), out.entropy!.toArray()]);
    })
  );
  const valid = (i: number) => b.responseMask[R + i] !== 0;
  const pick = (a: ArrayLike<number>, off: number) =>
    Array.from({ length: R }, (_, i) => valid(i) ? a[off + i] : 0);
  assertClose(pick(logProbs, R), pick(whole[0], P - 1), { atol: 1e-4, label: "log-probs" });
  assertClose(pick(entropys!, R), pick(whole[1], P - 1), { atol: 1e-4, label: "entropy" });

  b.oldLogProbs = logProbs;
  const before = await model.params().get("model.embed_tokens.weight")!.toArray();
  const m = await updateOnce(model, b, loadConfig("ppo_trainer", { skipPathChecks: true }));
  assert.ok(Number.isFinite(m["actor/grad_norm"]) && m["actor/grad_norm"] > 0, JSON.stringify(m));
  const after = await model.params().get("model.embed_tokens.weight")!.toArray();
  assert.ok(after.some((v, i) => v !== before[i]), "the tied table moved");

  const sft = await sftEvalLoss(
    model,
    Array.from({ length: B }, (_, i) => ({
      promptIds: [5 + i, 6, 7],
      responseIds: Array.from({ length: T - 3 }, (_, k) => (k * 7919 + i) % VOCAB),
    })),
    B,
  );
  assert.ok(sft > 0 && Number.isFinite(sft), `sft loss ${sft}`);
});

gpuTest("keep_logits_gb: the update takes the forward's logits and learns the same", async () => {
  const weights = tinyWeights(config, { seed: 2 });
  const runs = [];
  for (const keep of ["0", "0.5"]) {
    const cfg = loadConfig("ppo_trainer", {
      overrides: [`actor_rollout_ref.actor.keep_logits_gb=${keep}`],
      skipPathChecks: true,
    });
    const model = CausalLM.fromTensors(config, weights);
    const pool = gpu().pool;
    pool.resetPeak();
    const m = await updateOnce(model, batch(), cfg, keepLogitsBytes(cfg));
    const table = await model.params().get("model.embed_tokens.weight")!.toArray();
    runs.push({ m, table, peak: pool.peakBytes });
  }
  const [recomputed, kept] = runs;
  assert.equal(kept.m["actor/grad_norm"], recomputed.m["actor/grad_norm"]);
  assert.deepEqual(kept.table, recomputed.table, "the same weights after the step, bit for bit");
  // the scored tokens' logits (f32) held from the forward to the backward
  const logits = batch().responseMask.reduce((a, m) => a + m, 0) * VOCAB * 4;
  assert.ok(kept.peak >= recomputed.peak + 0.5 * logits, `${kept.peak} vs ${recomputed.peak}`);
});
