/**
 * A paged KV cache for continuous batching: per layer a pool of `numBlocks` blocks of `blockSize`
 * positions, keys and values [numBlocks, blockSize, Hkv, D] (f32, or IEEE halves as KvCache), a
 * free list of block ids, and per decode step a table i32 [rows, 1 + W] holding each running
 * row's length and its block ids in order, through which the paged kernels write the new token's
 * key and value (paged_rope_qk_cache) and attend over that row's own keys (attention_decode
 * PAGED). A sequence's memory is the blocks it fills, not a padded maximum length. Blocks are
 * reference-counted: sequences may share full blocks (a prompt prefilled once for its samples,
 * `share`); a block returns to the pool when its last holder releases it, unless it is published
 * in the prefix cache (`publish`, paged_block_index.ts): then it stays cached, for a later
 * sequence with the same leading tokens to hold again (`matchPrefix`), until the pool needs it.
 */
import { gpu } from "../gpu/mod.ts";
import { pagedAttention, pagedRopeQKIntoCache, Tensor } from "../tensor/mod.ts";
import type { KvCache, KvDtype } from "./kv_cache.ts";
import { BlockIndex } from "./paged_block_index.ts";
import { checkRow, copyRow } from "./paged_kv_copy.ts";
import type { LayerAttention } from "./layers.ts";

/** One sequence in the cache: its positions filled and the blocks holding them, in order. */
export interface PagedSequence {
  length: number;
  blocks: number[];
}

export class PagedKvCache {
  readonly #free: number[];
  /** Holders of each block (0 = free or cached). */
  readonly #refs: Int32Array;
  readonly #index = new BlockIndex();

  private constructor(
    readonly blockSize: number,
    readonly numBlocks: number,
    readonly dtype: KvDtype,
    /** Bytes of one position of one layer's keys (Hkv * D elements). */
    readonly rowBytes: number,
    /** Per layer [numBlocks, blockSize, Hkv, D]. */
    readonly keys: Tensor[],
    readonly values: Tensor[],
  ) {
    // Lowest ids first out (a stack popped from the end).
    this.#free = Array.from({ length: numBlocks }, (_, i) => numBlocks - 1 - i);
    this.#refs = new Int32Array(numBlocks);
  }

  static create(options: {
    layers: number;
    numBlocks: number;
    blockSize: number;
    kvHeads: number;
    headDim: number;
    /** Element type of the pools (default f32); f16 needs headDim % 4 == 0. */
    dtype?: KvDtype;
  }): PagedKvCache {
    const { layers, numBlocks, blockSize, kvHeads, headDim } = options;
    const dtype = options.dtype ?? "f32";
    if ((dtype !== "f32" && dtype !== "f16") || (dtype === "f16" && headDim % 4 !== 0)) {
      throw new Error(
        `PagedKvCache: dtype ${dtype} with head size ${headDim}: use f32, or f16 with a head ` +
          `size that is a multiple of 4`,
      );
    }
    for (const [name, v] of [["numBlocks", numBlocks], ["blockSize", blockSize]] as const) {
      if (!(Number.isInteger(v) && v > 0)) {
        throw new Error(`PagedKvCache: ${name} ${v} must be a positive integer`);
      }
    }
    const shape = [numBlocks, blockSize, kvHeads, headDim];
    const keys = [], values = [];
    for (let l = 0; l < layers; l++) {
      keys.push(Tensor.empty(shape, dtype, `paged_kv.k${l}`).keep());
      values.push(Tensor.empty(shape, dtype, `paged_kv.v${l}`).keep());
    }
    const rowBytes = kvHeads * headDim * (dtype === "f16" ? 2 : 4);
    return new PagedKvCache(blockSize, numBlocks, dtype, rowBytes, keys, values);
  }

  /** Blocks not held by any sequence (the cached ones included: they are evicted on demand). */
  get freeBlocks(): number {
    return this.#free.length + this.#index.idle;
  }

  /** Blocks published in the prefix cache, held or not. */
  get cachedBlocks(): number {
    return this.#index.size;
  }

  /** Changes whenever the prefix cache's contents do (what `findPrefix` answers may change). */
  get prefixVersion(): number {
    return this.#index.version;
  }

  /** Blocks that `length` positions fill. */
  blocksFor(length: number): number {
    return Math.ceil(length / this.blockSize);
  }

  /** Gives `seq` the blocks it needs to hold `length` positions; false (nothing taken) if short. */
  reserve(seq: PagedSequence, length: number): boolean {
    const more = this.blocksFor(length) - seq.blocks.length;
    if (more > this.freeBlocks) return false;
    for (let i = 0; i < more; i++) {
      // Free blocks first, then the least recently released cached one.
      const id = this.#free.pop() ?? this.#index.evict();
      this.#refs[id] = 1;
      seq.blocks.push(id);
    }
    return true;
  }

  /**
   * Appends `blocks` (held by another sequence or cached, full ones: nobody writes them again) to
   * `seq`, which holds them too until it is released.
   */
  share(seq: PagedSequence, blocks: readonly number[]): void {
    for (const id of blocks) {
      if (this.#refs[id] <= 0 && !this.#index.unpark(id)) {
        throw new Error(`PagedKvCache.share: block ${id} is free`);
      }
      this.#refs[id]++;
      seq.blocks.push(id);
    }
  }

  /**
   * Drops `seq`'s hold on each of its blocks: a block nobody holds returns to the pool, or stays
   * cached when published (its last blocks first in line for eviction).
   */
  release(seq: PagedSequence): void {
    for (let i = seq.blocks.length - 1; i >= 0; i--) {
      const id = seq.blocks[i];
      if (--this.#refs[id] === 0 && !this.#index.park(id)) this.#free.push(id);
    }
    seq.blocks = [];
    seq.length = 0;
  }

  /**
   * The cached blocks, in order, of the longest run of full blocks that starts `ids`, covering
   * at most `limit` positions. Changes nothing (the eviction order included): `share` holds them.
   */
  findPrefix(ids: Int32Array, limit: number): number[] {
    const bs = this.blockSize, found: number[] = [];
    for (let parent = 0, i = 0; (i + 1) * bs <= Math.min(limit, ids.length); i++) {
      const hit = this.#index.find(parent, ids.subarray(i * bs, (i + 1) * bs));
      if (!hit) break;
      found.push(hit.block);
      parent = hit.node;
    }
    return found;
  }

  /** Free blocks once `blocks` (held or cached) are shared: cached ones nobody holds are not. */
  freeAfterShare(blocks: readonly number[]): number {
    return this.freeBlocks - blocks.filter((id) => this.#refs[id] === 0).length;
  }

  /**
   * Gives empty `seq` the blocks `findPrefix` finds; returns the positions they hold (a multiple
   * of blockSize). `seq.length` stays 0: the caller fills the rest (`writePrefill` with `at`).
   */
  matchPrefix(seq: PagedSequence, ids: Int32Array, limit: number): number {
    if (seq.blocks.length > 0) {
      throw new Error("PagedKvCache.matchPrefix: the sequence holds blocks");
    }
    const found = this.findPrefix(ids, limit);
    this.share(seq, found);
    return found.length * this.blockSize;
  }

  /**
   * Publishes the full blocks of `seq` that hold the first `length` positions of `ids` (their
   * keys and values written, or recorded to be, before any later use) in the prefix cache.
   */
  publish(seq: PagedSequence, ids: Int32Array, length: number): void {
    const bs = this.blockSize;
    const n = Math.min(Math.floor(Math.min(length, ids.length) / bs), seq.blocks.length);
    for (let parent = 0, i = 0; i < n; i++) {
      parent = this.#index.publish(seq.blocks[i], parent, ids.subarray(i * bs, (i + 1) * bs));
      if (parent < 0) return;
    }
  }

  /** Empties the prefix cache: cached blocks nobody holds return to the pool. */
  clearPrefixCache(): void {
    this.#free.push(...this.#index.clear());
  }

  /**
   * Copies the first `rows` positions of block `from` into each block of `to`, in every layer
   * (through one scratch buffer: WebGPU copies within one buffer are not allowed).
   */
  copyBlock(from: number, to: readonly number[], rows: number): void {
    if (!(rows > 0 && rows <= this.blockSize)) {
      throw new Error(`PagedKvCache.copyBlock: ${rows} rows of a block of ${this.blockSize}`);
    }
    const g = gpu(), stride = this.blockSize * this.rowBytes, size = rows * this.rowBytes;
    const pools = [...this.keys, ...this.values];
    const scratch = Tensor.empty([(pools.length * size) / 4], "f32", "paged_kv.copy");
    try {
      pools.forEach((t, i) => g.copy(t.buffer, from * stride, scratch.buffer, i * size, size));
      for (const block of to) {
        pools.forEach((t, i) => g.copy(scratch.buffer, i * size, t.buffer, block * stride, size));
      }
    } finally {
      scratch.dispose();
    }
  }

  /**
   * Copies `length` positions of one row of a contiguous cache (a prefill), starting at
   * position `from` of row `row` (left padding skipped), into the blocks of `seq` (reserved
   * beforehand) from position `at` on (a multiple of blockSize: the positions before it are
   * cached blocks), one buffer copy per block and layer, and sets its length to at + length. A
   * block's positions are contiguous in both layouts, so no kernel is needed.
   */
  writePrefill(
    seq: PagedSequence,
    kv: KvCache,
    length: number,
    options: { row?: number; from?: number; at?: number } = {},
  ): void {
    const { row = 0, from = 0, at = 0 } = options;
    checkRow(this, "writePrefill", seq, kv, { row, from, at, length });
    copyRow(this, seq, kv, { row, from, at, length }, false);
    seq.length = at + length;
  }

  /**
   * Copies the first `length` positions of `seq` (a multiple of blockSize: its cached blocks)
   * into row `row` of the contiguous cache `kv` from position `from` on (writePrefill's inverse).
   */
  readPrefix(
    seq: PagedSequence,
    kv: KvCache,
    length: number,
    options: { row?: number; from?: number } = {},
  ): void {
    const { row = 0, from = 0 } = options;
    checkRow(this, "readPrefix", seq, kv, { row, from, at: 0, length });
    copyRow(this, seq, kv, { row, from, at: 0, length }, true);
  }

  /**
   * The table of one decode step, i32 [rows, 1 + W]: each row's length counting the token this
   * step appends, then its block ids (unused entries 0, a valid id). Every row must hold the
   * blocks for that length. Returns it with the longest length.
   */
  table(rows: PagedSequence[]): { table: Tensor; maxLength: number } {
    const W = Math.max(1, ...rows.map((r) => r.blocks.length));
    const t = new Int32Array(rows.length * (1 + W));
    let maxLength = 0;
    rows.forEach((r, b) => {
      const len = r.length + 1;
      if (this.blocksFor(len) > r.blocks.length) {
        throw new Error(
          `PagedKvCache.table: row ${b} needs ${
            this.blocksFor(len)
          } blocks, holds ${r.blocks.length}`,
        );
      }
      t[b * (1 + W)] = len;
      t.set(r.blocks, b * (1 + W) + 1);
      maxLength = Math.max(maxLength, len);
    });
    return { table: Tensor.from(t, [rows.length, 1 + W], "i32", "paged_kv.table"), maxLength };
  }

  /** Per layer: write the new key and value through `table`, attend over each row's keys. */
  layerAttention(table: Tensor, maxLength: number): (l: number) => LayerAttention {
    return (l) => ({
      rotate: (qkv, rope) =>
        pagedRopeQKIntoCache(qkv.q, qkv.k, qkv.v, qkv.positions, {
          ...rope,
          cache: { keys: this.keys[l], values: this.values[l], table },
          splits: qkv.splits,
        }),
      attend: (q) => pagedAttention(q, this.keys[l], this.values[l], { table, maxLength }),
    });
  }

  dispose(): void {
    for (const t of [...this.keys, ...this.values]) t.dispose();
  }
}
