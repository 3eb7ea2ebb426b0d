/** Prompts with n samples each through an Engine, each sample with a seed of its own. */
import { mixSeed } from "../tensor/mod.ts";
import type { Engine, EngineResult } from "./engine.ts";

/**
 * Submits `n` requests per prompt together and waits for all: result [p][j] is sample j of prompt
 * p, drawn with seed mixSeed(seed, (first + p) * n + j) (so `first`, the prompts' index in a
 * larger job, keeps every sample's seed its own across calls).
 */
export function submitPrompts(
  engine: Engine,
  prompts: ArrayLike<number>[],
  options: { n: number; maxTokens: number; seed: number; first?: number },
): Promise<EngineResult[][]> {
  const { n, maxTokens, seed } = options;
  const first = options.first ?? 0;
  return Promise.all(prompts.map((promptIds, p) =>
    Promise.all(
      Array.from({ length: n }, (_, j) =>
        engine.submit({ promptIds, maxTokens, seed: mixSeed(seed, (first + p) * n + j) })),
    )
  ));
}
