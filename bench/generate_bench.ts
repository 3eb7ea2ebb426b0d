/**
 * Generation throughput on whatever adapter Deno finds (CI: the CPU adapter), with the tiny model
 * so that it finishes quickly; bench/generate_device.ts measures the 0.5B shape on a GPU.
 */
import { initGpu } from "../src/gpu/mod.ts";
import { CausalLM, tinyModelConfig } from "../src/nn/mod.ts";
import { generate } from "../src/rollout/mod.ts";

await initGpu();
const config = tinyModelConfig({ vocabSize: 97, eosTokenId: 0 });
const model = CausalLM.random(config, { seed: 1 });
const B = 8, P = 16, R = 32;
const ids = Int32Array.from({ length: B * P }, (_, i) => 1 + (i * 31) % 96);
const mask = new Int32Array(B * P).fill(1);
const options = {
  inputIds: ids,
  attentionMask: mask,
  batch: B,
  promptLength: P,
  temperature: 1,
  topK: 20,
  topP: 0.9,
  eosTokenIds: [],
  padTokenId: 0,
  seed: 1,
};
await generate(model, { ...options, responseLength: 2 }); // compile the pipelines

Deno.bench({
  name: `generate tiny qwen2: B=${B}, prompt ${P}, ${R} new tokens (top-k/top-p)`,
  group: "generate",
  baseline: true,
  n: 5,
  warmup: 1,
  fn: async () => {
    await generate(model, { ...options, responseLength: R });
  },
});

Deno.bench({
  name: `prefill + first token: B=${B}, prompt ${P}`,
  group: "generate",
  n: 5,
  warmup: 1,
  fn: async () => {
    await generate(model, { ...options, responseLength: 1 });
  },
});
