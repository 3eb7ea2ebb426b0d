/**
 * The index of a paged KV cache's prefix cache (vLLM's automatic prefix caching): full blocks
 * published under a key chained over their contents, found again by any later sequence whose
 * context starts with the same tokens. Block i of a context is keyed by (the node of block
 * i - 1, the token ids of block i), from node 0 (the empty prefix); a published block gets a
 * node number used once, never again, so a key names exact contents (no hash collision can
 * hand out a wrong block). Published blocks nobody holds stay cached ("idle"), least recently
 * released first out, until the pool needs a block: the evicted block is unpublished, and what
 * was keyed under its node is unreachable from then on (evicted in turn when its time comes).
 */

interface Entry {
  block: number;
  node: number;
  key: string;
}

export class BlockIndex {
  readonly #byKey = new Map<string, Entry>();
  readonly #byBlock = new Map<number, Entry>();
  /** Published blocks that no sequence holds, in release order (oldest first). */
  readonly #idle = new Set<number>();
  #nodes = 0;
  #version = 0;

  /** Changes whenever what `find` answers may change (a block published, evicted or cleared). */
  get version(): number {
    return this.#version;
  }

  /** Published blocks nobody holds (evictable). */
  get idle(): number {
    return this.#idle.size;
  }

  /** Published blocks, held or not. */
  get size(): number {
    return this.#byBlock.size;
  }

  static key(parent: number, ids: ArrayLike<number>): string {
    return `${parent}:${Array.prototype.join.call(ids, ",")}`;
  }

  /** The block published with `ids` after node `parent`, or null. */
  find(parent: number, ids: ArrayLike<number>): { block: number; node: number } | null {
    return this.#byKey.get(BlockIndex.key(parent, ids)) ?? null;
  }

  /**
   * Publishes held full `block` with `ids` after node `parent`; returns the node of those
   * contents (the one already published, if any), or -1 when `block` is published under other
   * contents' key (then nothing changes).
   */
  publish(block: number, parent: number, ids: ArrayLike<number>): number {
    const key = BlockIndex.key(parent, ids);
    const found = this.#byKey.get(key);
    if (found) return found.node;
    if (this.#byBlock.has(block)) return -1;
    const e = { block, node: ++this.#nodes, key };
    this.#byKey.set(key, e);
    this.#byBlock.set(block, e);
    this.#version++;
    return e.node;
  }

  /** The last holder of `block` released it: true when it stays cached (it is published). */
  park(block: number): boolean {
    if (!this.#byBlock.has(block)) return false;
    this.#idle.add(block);
    return true;
  }

  /** Idle `block` is held again: true if it was idle. */
  unpark(block: number): boolean {
    return this.#idle.delete(block);
  }

  /** Unpublishes the least recently released idle block and returns it; -1 when none is idle. */
  evict(): number {
    const first = this.#idle.values().next();
    if (first.done) return -1;
    const block = first.value;
    this.#idle.delete(block);
    this.#byKey.delete(this.#byBlock.get(block)!.key);
    this.#byBlock.delete(block);
    this.#version++;
    return block;
  }

  /** Unpublishes every block; returns the idle ones (now free). */
  clear(): number[] {
    const idle = [...this.#idle];
    this.#idle.clear();
    this.#byKey.clear();
    this.#byBlock.clear();
    this.#version++;
    return idle;
  }
}
