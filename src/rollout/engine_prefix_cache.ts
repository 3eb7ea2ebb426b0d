/**
 * The engine's use of the pool's prefix cache (vLLM's automatic prefix caching;
 * PagedKvCache.matchPrefix / publish): full blocks stay in the pool keyed by their contents,
 * chained block after block. A sequence admitted with a context of C tokens holds the cached
 * blocks of its first C - 1 at most (its last token is computed, for its logits) and prefills
 * the rest (engine_prefill.ts); every prefill's full blocks are published once its step is
 * recorded (later steps run after it), and a sequence's full blocks whose keys and values are
 * written when it ends or is preempted. A cached block nobody holds counts as free and is
 * evicted, least recently released first, when the pool needs a block.
 */
import type { PagedKvCache } from "../nn/mod.ts";
import type { PrefixEntry } from "./engine_prefix.ts";
import { cachedPrefix } from "./engine_prefix_probe.ts";
import { context, type StepSequence } from "./engine_step.ts";

/**
 * Gives `s` (no blocks) the cached blocks of its context's first C - 1 tokens at most, then the
 * blocks the rest and its first sampled token need; sets `s.cached`. False when the pool is
 * short: then nothing is taken or touched (engine_prefix_probe.ts).
 */
export function reserveCached(cache: PagedKvCache, s: StepSequence, C: number): boolean {
  const blocks = cachedPrefix(cache, s, () => context(s), C - 1);
  if (cache.blocksFor(C + 1) - blocks.length > cache.freeAfterShare(blocks)) return false;
  cache.share(s.cache, blocks);
  cache.reserve(s.cache, C + 1);
  s.cached = blocks.length * cache.blockSize;
  s.probe = null;
  return true;
}

/** Publishes the full blocks of the shared prompts and the admitted sequences a step prefilled. */
export function publishPrefilled(
  cache: PagedKvCache,
  prefixes: PrefixEntry[],
  admitted: StepSequence[],
): void {
  for (const e of prefixes) cache.publish(e.cache, e.ids, e.ids.length);
  for (const s of admitted) if (!s.prefix) cache.publish(s.cache, context(s), s.cache.length);
}

/**
 * Publishes the full blocks of `s` whose keys and values are written: positions of its context
 * (prompt and tokens read), not those of tokens sampled past an EOS read late.
 */
export function publishWritten(cache: PagedKvCache, s: StepSequence): void {
  const ctx = context(s);
  cache.publish(s.cache, ctx, Math.min(s.cache.length, ctx.length));
}
