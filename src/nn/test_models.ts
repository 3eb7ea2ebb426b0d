/** Tiny configs and weights with non-trivial values for the decoder, critic and rollout tests. */
import { makeModelConfig, type ModelConfig } from "../io/mod.ts";
import { rng } from "../testing/mod.ts";
import { initWeights } from "./weights.ts";

/** Qwen2 with GQA (4 query heads over 2 kv heads), q/k/v bias, tied embeddings. */
export function tinyQwen2(overrides: Partial<ModelConfig> = {}): ModelConfig {
  return makeModelConfig({
    modelType: "qwen2",
    hiddenSize: 32,
    intermediateSize: 44,
    numHiddenLayers: 2,
    numAttentionHeads: 4,
    numKeyValueHeads: 2,
    vocabSize: 37,
    eosTokenId: 2,
    tieWordEmbeddings: true,
    ropeTheta: 1e6,
    rmsNormEps: 1e-6,
    ...overrides,
  });
}

/** Llama, untied, every head its own kv head, o_proj bias on. */
export function tinyLlama(overrides: Partial<ModelConfig> = {}): ModelConfig {
  return makeModelConfig({
    modelType: "llama",
    hiddenSize: 24,
    intermediateSize: 40,
    numHiddenLayers: 2,
    numAttentionHeads: 3,
    numKeyValueHeads: 3,
    vocabSize: 29,
    eosTokenId: 2,
    tieWordEmbeddings: false,
    attentionBias: true,
    ropeTheta: 10000,
    rmsNormEps: 1e-5,
    ...overrides,
  });
}

/** Weights with std 0.25 matrices and randomised norms and biases, so every path matters. */
export function testWeights(
  shapes: Map<string, number[]>,
  seed: number,
): Map<string, Float32Array> {
  const w = initWeights(shapes, { seed, std: 0.25 });
  const r = rng(seed + 1);
  for (const [name, arr] of w) {
    if (name.endsWith("norm.weight")) { for (let i = 0; i < arr.length; i++) arr[i] = 0.5 + r(); }
    if (name.endsWith(".bias")) { for (let i = 0; i < arr.length; i++) arr[i] = r() - 0.5; }
  }
  return w;
}

/** Left-padded random prompts: `pads[b]` leading pad tokens in row b. ids/mask [B, T] */
export function leftPadded(
  batch: number,
  seqLen: number,
  pads: number[],
  vocab: number,
  seed: number,
): { ids: Int32Array; mask: Int32Array } {
  const r = rng(seed);
  const ids = new Int32Array(batch * seqLen);
  const mask = new Int32Array(batch * seqLen);
  for (let b = 0; b < batch; b++) {
    for (let t = 0; t < seqLen; t++) {
      const real = t >= pads[b];
      mask[b * seqLen + t] = real ? 1 : 0;
      ids[b * seqLen + t] = real ? 3 + Math.floor(r() * (vocab - 3)) : 0;
    }
  }
  return { ids, mask };
}
