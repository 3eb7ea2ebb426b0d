/**
 * What a waiting admission found in the prefix cache, kept while the cache is unchanged. A
 * request the pool is too short for is tried again every step; it looks its context up again
 * only once the cache changed (a block published, evicted or cleared: PagedKvCache's
 * prefixVersion), and the look-up holds nothing, so a failed admission leaves the eviction order
 * as it was.
 */
import type { PagedKvCache } from "../nn/mod.ts";

/** The cached blocks found for the first `limit` positions of a context, at `version`. */
export interface PrefixProbe {
  version: number;
  limit: number;
  blocks: number[];
}

/** Whatever looks the prefix cache up while it waits (a sequence). */
export interface ProbeHolder {
  probe: PrefixProbe | null;
}

/**
 * The prefix cache's blocks of the first `limit` positions of `ids()` at most
 * (PagedKvCache.findPrefix; `ids` is read only when the cache changed since `holder` looked).
 */
export function cachedPrefix(
  cache: PagedKvCache,
  holder: ProbeHolder,
  ids: () => Int32Array,
  limit: number,
): number[] {
  const p = holder.probe, version = cache.prefixVersion;
  if (p && p.version === version && p.limit === limit) return p.blocks;
  const blocks = cache.findPrefix(ids(), limit);
  holder.probe = { version, limit, blocks };
  return blocks;
}
