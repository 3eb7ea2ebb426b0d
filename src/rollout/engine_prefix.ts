/**
 * Shared prompt prefixes of the engine. Requests whose prompt ids are identical (e.g. the
 * `rollout.n` samples of one prompt) share one prefill: the first of them admitted while another
 * such request waits creates an entry, whose prompt is prefilled once into blocks of its own, and
 * whose last-position logits are kept. Every sequence admitted with that prompt while the entry
 * lives (it lives while any of them runs) holds the entry's full blocks (reference-counted), gets
 * its own copy of the partly filled last block, and draws its first token from the kept logits
 * with its own seed: no prefill compute at all. A preempted sequence comes back with tokens of
 * its own, so it is prefilled whole, without the entry.
 */
import type { PagedKvCache, PagedSequence } from "../nn/mod.ts";
import type { Tensor } from "../tensor/mod.ts";
import { cachedPrefix, type ProbeHolder } from "./engine_prefix_probe.ts";

/** One shared prompt: its blocks (full ones, then the partly filled one, if any). */
export interface PrefixEntry {
  key: string;
  ids: Int32Array;
  cache: PagedSequence;
  /** Blocks its holders share (the full ones). */
  full: number;
  /** Positions its blocks held from the prefix cache when created (not prefilled). */
  cached: number;
  /** Logits [1, V] of its last position, set once the prefill is recorded. */
  logits: Tensor | null;
  /** Sequences holding it. */
  users: number;
}

/** What the table needs of a sequence. */
export interface PrefixHolder extends ProbeHolder {
  prompt: Int32Array;
  cache: PagedSequence;
  prefix: PrefixEntry | null;
}

export function prefixKey(prompt: Int32Array): string {
  return prompt.join(",");
}

export class PrefixTable {
  readonly #entries = new Map<string, PrefixEntry>();
  /** Fresh (never admitted) waiting requests per prompt key. */
  readonly #waiting = new Map<string, number>();
  /** Entries created since the last `takeCreated`: their prefill is still to be recorded. */
  #created: PrefixEntry[] = [];

  /** `prefixCaching`: an entry starts from the prefix cache's blocks of its prompt. */
  constructor(readonly cache: PagedKvCache, readonly prefixCaching: boolean) {}

  /** A fresh request with prompt `key` waits. */
  wait(key: string): void {
    this.#waiting.set(key, (this.#waiting.get(key) ?? 0) + 1);
  }

  /** A fresh request with prompt `key` was admitted. */
  admitted(key: string): void {
    const left = this.#waiting.get(key)! - 1;
    if (left > 0) this.#waiting.set(key, left);
    else this.#waiting.delete(key);
  }

  /** Whether a fresh request with prompt `key` shares it: its entry lives, or another waits. */
  shares(key: string): boolean {
    return this.#entries.has(key) || this.#waiting.get(key)! > 1;
  }

  /**
   * Gives the fresh sequence `s` (no blocks yet) the entry of its prompt (created when missing,
   * from the prefix cache's blocks of all but its last token where caching is on) and the blocks
   * of its own that its prompt and first token need; false, taking and touching nothing, when
   * the pool is short.
   */
  join(s: PrefixHolder, key: string): boolean {
    const cache = this.cache, P = s.prompt.length;
    const full = Math.floor(P / cache.blockSize);
    const existing = this.#entries.get(key);
    const own = cache.blocksFor(P + 1) - full;
    let e = existing;
    if (!e) {
      const found = this.prefixCaching ? cachedPrefix(cache, s, () => s.prompt, P - 1) : [];
      if (own + cache.blocksFor(P) - found.length > cache.freeAfterShare(found)) return false;
      const seq = { length: 0, blocks: [] };
      cache.share(seq, found);
      const cached = found.length * cache.blockSize;
      e = { key, ids: s.prompt, cache: seq, full, cached, logits: null, users: 0 };
      cache.reserve(e.cache, P);
      e.cache.length = P;
      this.#entries.set(key, e);
      this.#created.push(e);
    } else if (cache.freeBlocks < own) return false;
    cache.share(s.cache, e.cache.blocks.slice(0, full));
    cache.reserve(s.cache, P + 1);
    e.users++;
    s.prefix = e;
    s.probe = null;
    return true;
  }

  /** Drops `s`'s hold on its entry (after its blocks are released); the last holder frees it. */
  leave(s: PrefixHolder): void {
    const e = s.prefix;
    if (!e) return;
    s.prefix = null;
    if (--e.users > 0) return;
    this.cache.release(e.cache);
    e.logits?.dispose();
    this.#entries.delete(e.key);
  }

  /** The entries whose prefill the next step records. */
  takeCreated(): PrefixEntry[] {
    const out = this.#created;
    this.#created = [];
    return out;
  }

  /** Frees every entry and forgets the waiting (the engine failed). */
  clear(): void {
    for (const e of this.#entries.values()) {
      this.cache.release(e.cache);
      e.logits?.dispose();
    }
    this.#entries.clear();
    this.#waiting.clear();
    this.#created = [];
  }
}
