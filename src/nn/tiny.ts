/**
 * The tiny Qwen2-style model of the embedded default: character vocabulary, two layers,
 * grouped-query attention. Small enough to train on a CPU WebGPU adapter in minutes.
 */
import { makeModelConfig, type ModelConfig } from "../io/mod.ts";

export function tinyModelConfig(vocabSize: number, eosTokenId: number): ModelConfig {
  return makeModelConfig({
    modelType: "qwen2",
    hiddenSize: 64,
    intermediateSize: 192,
    numHiddenLayers: 2,
    numAttentionHeads: 4,
    numKeyValueHeads: 2,
    vocabSize,
    eosTokenId,
    maxPositionEmbeddings: 64,
    tieWordEmbeddings: true,
    ropeTheta: 10000,
  });
}
