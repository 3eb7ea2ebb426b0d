/** Test fixtures of the engine: the tiny model its tests run, and greedy options over a small pool. */
import { CausalLM, TINY_QWEN2, tinyModelConfig, tinyWeights } from "../nn/mod.ts";
import type { EngineOptions } from "./engine_types.ts";

/** The tiny Qwen2 of the engine's tests (varied weights, seed 31). */
export function tinyEngineModel(): CausalLM {
  const config = tinyModelConfig(TINY_QWEN2);
  return CausalLM.fromTensors(config, tinyWeights(config, { seed: 31, init: "varied" }));
}

/** Greedy, 4 sequences, 64 blocks of 4, no EOS, pad 0; `o` overrides. */
export function greedyOptions(o: Partial<EngineOptions> = {}): EngineOptions {
  return {
    maxSeqs: 4,
    blockSize: 4,
    numBlocks: 64,
    eosTokenIds: [],
    padTokenId: 0,
    sampling: { doSample: false },
    ...o,
  };
}
