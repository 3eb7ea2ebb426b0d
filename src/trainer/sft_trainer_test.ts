import assert from "node:assert/strict";
import { charTokenizer } from "../io/mod.ts";
import { CausalLM } from "../nn/mod.ts";
import { gpuTest } from "../testing/mod.ts";
import { makeOptimizer } from "./build.ts";
import type { SftExample } from "../data/mod.ts";
import { sftEvalLoss, sftFit, sftInputs, trainedTokens } from "./sft_trainer.ts";
import { tinyModelConfig } from "../nn/mod.ts";

function examples(): SftExample[] {
  const tok = charTokenizer();
  const out: SftExample[] = [];
  for (const a of [0, 3, 12, 57]) {
    for (let b = 0; b < 4; b++) {
      const prompt = tok.applyChatTemplate([{ role: "user", content: `${a}+${b}=` }], {
        addGenerationPrompt: true,
      });
      out.push({
        promptIds: tok.encode(prompt, { addSpecialTokens: false }),
        responseIds: [...tok.encode(`#### ${a + b}`, { addSpecialTokens: false }), tok.eosTokenId],
      });
    }
  }
  return out;
}

gpuTest("sft inputs mark exactly the response tokens as targets", async () => {
  const ex = [{ promptIds: [5, 6, 7], responseIds: [8, 9] }, { promptIds: [5], responseIds: [4] }];
  const m = sftInputs(ex);
  assert.equal(m.tokens, 3);
  // T = 5: row 0 predicts 8 at position 2 and 9 at 3; row 1 predicts 4 at position 0.
  assert.deepEqual([...await m.targets.toArray()], [
    -100,
    -100,
    8,
    9,
    -100,
    4,
    -100,
    -100,
    -100,
    -100,
  ]);
  assert.deepEqual([...await m.mask.toArray()], [1, 1, 1, 1, 1, 1, 1, 0, 0, 0]);
});

gpuTest("sft inputs leave out response tokens the loss mask zeroes (tool turns)", async () => {
  // Response [8, 9, 10, 11]: 9 and 10 are a tool's reply, never a target.
  const ex = [{ promptIds: [5, 6], responseIds: [8, 9, 10, 11], lossMask: [1, 0, 0, 1] }];
  const m = sftInputs(ex);
  assert.equal(m.tokens, 2);
  assert.equal(trainedTokens(ex[0]), 2);
  assert.deepEqual([...await m.targets.toArray()], [-100, 8, -100, -100, 11, -100]);
});

gpuTest("sft lowers the response loss of a small set by a factor of four", async () => {
  const tok = charTokenizer();
  const config = tinyModelConfig({ vocabSize: tok.vocabSize, eosTokenId: tok.eosTokenId });
  const model = CausalLM.random(config, { seed: 1 });
  const data = examples();
  const before = await sftEvalLoss(model, data, 8);
  const optimizer = makeOptimizer(model.params(), {
    lr: 3e-3,
    betas: [0.9, 0.95],
    weight_decay: 0,
  });
  const logged: Record<string, number>[] = [];
  const res = await sftFit({
    model,
    optimizer,
    train: data,
    val: data,
    batchSize: 16,
    microBatchSize: 8, // two micro-batches: accumulation must match one batch of 16
    totalSteps: 40,
    lr: 3e-3,
    warmupStepsRatio: 0,
    scheduler: "constant",
    clipGrad: 1,
    seed: 1,
    shuffle: true,
    testFreq: -1,
    tracking: { log: (_s, m) => logged.push(m), close() {} },
    saveFreq: -1,
  });
  assert.equal(res.step, 40);
  assert.ok(res.valLoss < before / 4, `loss ${before} -> ${res.valLoss}`);
  assert.ok(logged.every((m) => Number.isFinite(m["train/loss"])));
  assert.ok(Math.abs(logged[0]["train/loss"] - before) < 0.5, "first train loss near the start");
});

gpuTest("use_remove_padding: packed micro-batches give the padded loss and gradients", async () => {
  const tok = charTokenizer();
  const config = tinyModelConfig({ vocabSize: tok.vocabSize, eosTokenId: tok.eosTokenId });
  const all = examples(); // one- and two-digit operands: rows of different lengths
  const data = [0, 8, 13, 4, 12, 1].map((i) => all[i]);
  const run = async (removePadding: boolean) => {
    const model = CausalLM.random(config, { seed: 3 });
    const optimizer = makeOptimizer(model.params(), {
      lr: 0.05,
      betas: [0.9, 0.95],
      weight_decay: 0,
    });
    const before = await sftEvalLoss(model, data, 3, { removePadding });
    await sftFit({
      model,
      optimizer,
      train: data,
      val: data,
      batchSize: 6,
      microBatchSize: 3,
      removePadding,
      totalSteps: 1,
      lr: 0.05,
      warmupStepsRatio: 0,
      scheduler: "constant",
      clipGrad: 1,
      seed: 1,
      shuffle: false,
      testFreq: -1,
      tracking: { log: () => {}, close() {} },
      saveFreq: -1,
    });
    const after = await model.toArrays();
    model.dispose();
    return { before, after };
  };
  const p = sftInputs(data.slice(0, 3), { removePadding: true }).packing!;
  assert.ok(p.tokens < p.batch * p.length, "the rows are ragged: packing drops padding");
  assert.equal(sftInputs(data.slice(0, 3)).packing, undefined);
  const padded = await run(false), packed = await run(true);
  assert.ok(Math.abs(packed.before - padded.before) < 1e-5, `${packed.before} ${padded.before}`);
  for (const [name, w] of padded.after) {
    const p = packed.after.get(name)!;
    const worst = w.reduce((m, v, i) => Math.max(m, Math.abs(v - p[i])), 0);
    assert.ok(worst < 1e-5, `${name}: the step differs by ${worst}`);
  }
});
