/**
 * The one home of "a tiny model": its config and its seeded random weights.
 *
 * The default is the embedded model that `deno task train` ships (assets/tiny_arith was trained
 * with exactly this shape, so it must not change): a two-layer Qwen2 with grouped-query attention
 * over the character tokenizer, small enough to train on a CPU WebGPU adapter in minutes. Tests
 * ask for variants by overrides ({@link TINY_QWEN2}, {@link TINY_LLAMA}, plus their own keys), so
 * every architecture path (GQA, biases, tied or untied head) runs at shapes llvmpipe can afford.
 */
import {
  CHAR_ALPHABET,
  CHAR_SPECIAL_TOKENS,
  makeModelConfig,
  type ModelConfig,
  type ModelConfigInit,
} from "../io/mod.ts";
import { mulberry32 } from "../tensor/mod.ts";
import { criticWeightShapes, initWeights, weightShapes } from "./weights.ts";

/** The embedded model: 64 hidden, 2 layers, 4 query heads over 2 kv heads, tied, q/k/v bias. */
const EMBEDDED: ModelConfigInit = {
  modelType: "qwen2",
  hiddenSize: 64,
  intermediateSize: 192,
  numHiddenLayers: 2,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
  // The character tokenizer's vocabulary (64 ids) and stop token; callers holding a tokenizer
  // pass its own values, which are the same for the shipped one.
  vocabSize: CHAR_SPECIAL_TOKENS.length + [...CHAR_ALPHABET].length,
  eosTokenId: CHAR_SPECIAL_TOKENS.indexOf("<eos>"),
  maxPositionEmbeddings: 64,
  tieWordEmbeddings: true,
  ropeTheta: 10000,
};

/**
 * The decoder tests' Qwen2: GQA (4 query heads over 2 kv heads), q/k/v bias, tied embeddings,
 * odd sizes (vocab 37, MLP 44) so that no kernel is only right for round shapes.
 */
export const TINY_QWEN2: Partial<ModelConfig> = {
  hiddenSize: 32,
  intermediateSize: 44,
  vocabSize: 37,
  eosTokenId: 2,
  ropeTheta: 1e6,
  rmsNormEps: 1e-6,
  maxPositionEmbeddings: 2048,
};

/** The decoder tests' Llama: untied head, one kv head per query head, o_proj bias on. */
export const TINY_LLAMA: Partial<ModelConfig> = {
  modelType: "llama",
  hiddenSize: 24,
  intermediateSize: 40,
  numAttentionHeads: 3,
  numKeyValueHeads: 3,
  vocabSize: 29,
  eosTokenId: 2,
  tieWordEmbeddings: false,
  attentionBias: true,
  ropeTheta: 10000,
  rmsNormEps: 1e-5,
  maxPositionEmbeddings: 2048,
};

/**
 * A tiny model's config: the embedded model's shape with `overrides` on top. Keys left out keep
 * the transformers defaults of `makeModelConfig` (head_dim = hidden / heads, the architecture's
 * attention bias), computed after the overrides, so a variant stays consistent.
 */
export function tinyModelConfig(overrides: Partial<ModelConfig> = {}): ModelConfig {
  return makeModelConfig({ ...EMBEDDED, ...overrides });
}

export interface TinyWeightsOptions {
  seed: number;
  /**
   * "hf" (default): what a fresh `transformers` model holds: matrices N(0, 0.02), norms 1, biases
   * 0. "varied": matrices N(0, 0.25), norms in [0.5, 1.5), biases in [-0.5, 0.5), so a test
   * against the CPU reference sees every weight's effect (a unit norm or zero bias hides bugs).
   */
  init?: "hf" | "varied";
  /** Standard deviation of the matrices, overriding the init's. */
  std?: number;
  /** The critic's layout (trunk and scalar value head) instead of the causal LM's. */
  critic?: boolean;
}

/** Seeded random weights for `config` by HF name (same seed, same values, on every machine). */
export function tinyWeights(
  config: ModelConfig,
  options: TinyWeightsOptions,
): Map<string, Float32Array> {
  const { seed, init = "hf", critic = false } = options;
  const shapes = critic ? criticWeightShapes(config) : weightShapes(config);
  const std = options.std ?? (init === "varied" ? 0.25 : 0.02);
  const w = initWeights(shapes, { seed, std });
  if (init === "varied") {
    const r = mulberry32(seed + 1);
    for (const [name, arr] of w) {
      if (name.endsWith("norm.weight")) { for (let i = 0; i < arr.length; i++) arr[i] = 0.5 + r(); }
      if (name.endsWith(".bias")) { for (let i = 0; i < arr.length; i++) arr[i] = r() - 0.5; }
    }
  }
  return w;
}
