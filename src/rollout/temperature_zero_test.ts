// temperature = 0 is greedy decoding (vLLM's and verl's meaning), not an error.
import assert from "node:assert/strict";
import { CausalLM } from "../nn/mod.ts";
import { TINY_QWEN2, tinyModelConfig, tinyWeights } from "../nn/mod.ts";
import { assertClose, gpuTest, leftPadded, randomArray } from "../testing/mod.ts";
import { Tensor } from "../tensor/mod.ts";
import { generate } from "./generate.ts";
import { SampleBuffers, type SamplerConfig, sampleStep } from "./sampler.ts";
import { logProbTemperature, samplingDistribution, tokenLogProb } from "./ref_sampler.ts";

const base: SamplerConfig = {
  temperature: 0,
  topK: 0,
  topP: 1,
  doSample: true,
  seed: 5,
  eosTokenIds: [],
  padTokenId: 0,
};

gpuTest(
  "sampler: temperature 0 with do_sample takes the argmax, log-probs untempered",
  async () => {
    const V = 40, rows = 64;
    const logits = randomArray(rows * V, 17, -3, 3);
    for (let r = 0; r < rows; r++) logits[r * V + (r * 7) % V] = 4 + (r % 3); // a clear argmax
    const bufs = SampleBuffers.create(rows, 1, new Int32Array(rows));
    sampleStep(Tensor.from(logits, [rows, V]), bufs, 0, base);
    const [tokens, lp] = [await bufs.responses.toArray(), await bufs.logProbs.toArray()];
    bufs.dispose();
    for (let r = 0; r < rows; r++) {
      const row = logits.subarray(r * V, (r + 1) * V);
      assert.equal(tokens[r], (r * 7) % V, `row ${r}`);
      assertClose([lp[r]], [tokenLogProb(row, tokens[r], 1)], { atol: 1e-5, label: `row ${r}` });
    }
    const bad = SampleBuffers.create(1, 1, new Int32Array(1));
    const one = Tensor.from(new Float32Array(V), [1, V]);
    assert.throws(() => sampleStep(one, bad, 0, { ...base, temperature: -1 }), /temperature.*-1/);
    assert.throws(() => sampleStep(one, bad, 0, { ...base, temperature: NaN }), /temperature/);
    bad.dispose();
  },
);

gpuTest("generate: temperature 0 equals do_sample=false, whatever the seed", async () => {
  const config = tinyModelConfig(TINY_QWEN2);
  const model = CausalLM.fromTensors(config, tinyWeights(config, { seed: 3, init: "varied" }));
  const { ids, mask } = leftPadded(2, 4, [1, 0], config.vocabSize, 9);
  const opts = {
    inputIds: ids,
    attentionMask: mask,
    batch: 2,
    promptLength: 4,
    n: 2,
    responseLength: 5,
    eosTokenIds: [],
    padTokenId: 0,
    returnLogProbs: true,
  };
  const greedy = await generate(model, { ...opts, doSample: false });
  const t0a = await generate(model, { ...opts, temperature: 0, doSample: true, seed: 1 });
  const t0b = await generate(model, { ...opts, temperature: 0, doSample: true, seed: 2 });
  assert.deepEqual(t0a.responses, greedy.responses);
  assert.deepEqual(t0b.responses, greedy.responses);
  assertClose(t0a.logProbs!, greedy.logProbs!, { atol: 1e-6 });
  model.dispose();
});

Deno.test("reference sampler: temperature 0 is one-hot at the argmax; log-probs use 1", () => {
  const logits = [0.5, 2, -1, 2, 1];
  const d = samplingDistribution(logits, { temperature: 0, topK: 0, topP: 1, doSample: true });
  assert.deepEqual([...d], [0, 1, 0, 0, 0]);
  assert.equal(logProbTemperature(0), 1);
  assert.equal(logProbTemperature(0.7), 0.7);
  assert.equal(tokenLogProb(logits, 1, 0), tokenLogProb(logits, 1, 1));
});
