/**
 * Requests through an Engine: prompts with n samples each, and the agent loop's turns, each with
 * a seed of its own.
 */
import { deriveSeed, mixSeed } from "../tensor/mod.ts";
import type { TurnGenerator, TurnRequest } from "./agent/mod.ts";
import type { Engine, EngineResult } from "./engine.ts";

/**
 * Submits `n` requests per prompt together and waits for all: result [p][j] is sample j of prompt
 * p, drawn with seed mixSeed(seed, (first + p) * n + j) (so `first`, the prompts' index in a
 * larger job, keeps every sample's seed its own across calls).
 */
export function submitPrompts(
  engine: Engine,
  prompts: ArrayLike<number>[],
  options: {
    n: number;
    maxTokens: number;
    seed: number;
    first?: number;
    returnLogProbs?: boolean;
    /** Hears each response as it ends: (responses ended, responses submitted). */
    onResult?: (done: number, total: number) => void;
  },
): Promise<EngineResult[][]> {
  const { n, maxTokens, seed, returnLogProbs } = options;
  const first = options.first ?? 0, total = prompts.length * n;
  let done = 0;
  return Promise.all(prompts.map((promptIds, p) =>
    Promise.all(
      Array.from({ length: n }, async (_, j) => {
        const seedJ = mixSeed(seed, (first + p) * n + j);
        const r = await engine.submit({ promptIds, maxTokens, seed: seedJ, returnLogProbs });
        options.onResult?.(++done, total);
        return r;
      }),
    )
  ));
}

/**
 * The engine's prefix cache as rollout metrics: `rollout/prefix_cache_hit_rate`, the share of the
 * context tokens its prefills needed that the cache held (cachedTokens / (cachedTokens +
 * prefillTokens); vLLM's prefix cache hit rate counts the same tokens); none when caching is off.
 */
export function prefixCacheMetrics(engine: Engine): Record<string, number> {
  if (engine.options.prefixCaching === false) return {};
  const s = engine.stats(), needed = s.cachedTokens + s.prefillTokens;
  return { "rollout/prefix_cache_hit_rate": needed > 0 ? s.cachedTokens / needed : 0 };
}

/**
 * The seed of one agent-loop turn: deriveSeed(seed, sample, turn), its own whatever else runs
 * beside it (the same whether the engine or a rollout call of its own samples the turn).
 */
export function turnSeed(seed: number, turn: Pick<TurnRequest, "sample" | "turn">): number {
  return deriveSeed(seed, turn.sample, turn.turn);
}

/**
 * The agent loop's turns as engine requests: each turn of each conversation is submitted on its
 * own, drawn with its turnSeed.
 */
export function engineTurns(
  engine: Engine,
  options: { seed: number; returnLogProbs?: boolean },
): TurnGenerator {
  return async (req) => {
    const r = await engine.submit({
      promptIds: req.ids,
      maxTokens: req.maxTokens,
      seed: turnSeed(options.seed, req),
      returnLogProbs: options.returnLogProbs,
    });
    return { tokens: r.tokens, logProbs: r.logProbs };
  };
}
