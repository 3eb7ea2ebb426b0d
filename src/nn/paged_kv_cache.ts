/**
 * A paged KV cache for continuous batching: per layer a pool of `numBlocks` blocks of `blockSize`
 * positions, keys and values [numBlocks, blockSize, Hkv, D] (f32, or IEEE halves as KvCache), a
 * free list of block ids, and per decode step a table i32 [rows, 1 + W] holding each running
 * row's length and its block ids in order, through which the paged kernels write the new token's
 * key and value (paged_rope_qk_cache) and attend over that row's own keys (attention_decode
 * PAGED). A sequence's memory is the blocks it fills, not a padded maximum length.
 */
import { gpu } from "../gpu/mod.ts";
import { pagedAttention, pagedRopeQKIntoCache, Tensor } from "../tensor/mod.ts";
import type { KvCache, KvDtype } from "./kv_cache.ts";
import type { LayerAttention } from "./layers.ts";

/** One sequence in the cache: its positions filled and the blocks holding them, in order. */
export interface PagedSequence {
  length: number;
  blocks: number[];
}

export class PagedKvCache {
  readonly #free: number[];

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

  /** Blocks not held by any sequence. */
  get freeBlocks(): number {
    return this.#free.length;
  }

  /** Blocks that `length` positions fill. */
  blocksFor(length: number): number {
    return Math.ceil(length / this.blockSize);
  }

  /** Gives `seq` the blocks it needs to hold `length` positions; false (nothing taken) if short. */
  reserve(seq: PagedSequence, length: number): boolean {
    const more = this.blocksFor(length) - seq.blocks.length;
    if (more > this.#free.length) return false;
    for (let i = 0; i < more; i++) seq.blocks.push(this.#free.pop()!);
    return true;
  }

  /** Returns every block of `seq` to the pool and empties it. */
  release(seq: PagedSequence): void {
    for (let i = seq.blocks.length - 1; i >= 0; i--) this.#free.push(seq.blocks[i]);
    seq.blocks = [];
    seq.length = 0;
  }

  /**
   * Copies `length` positions of one row of a contiguous cache (a prefill), starting at
   * position `from` of row `row` (left padding skipped), into the blocks of `seq` (reserved
   * beforehand), one buffer copy per block and layer, and sets its length. A block's positions
   * are contiguous in both layouts, so no kernel is needed.
   */
  writePrefill(
    seq: PagedSequence,
    kv: KvCache,
    length: number,
    options: { row?: number; from?: number } = {},
  ): void {
    const { row: r = 0, from = 0 } = options;
    if (kv.keys.length !== this.keys.length || kv.keys[0].dtype !== this.dtype || r >= kv.batch) {
      throw new Error(
        `PagedKvCache.writePrefill: expected a ${this.dtype} cache of ${this.keys.length} ` +
          `layers with a row ${r}, got batch ${kv.batch}, ${kv.keys.length} layers ` +
          `${kv.keys[0]?.dtype}`,
      );
    }
    if (from + length > kv.length || this.blocksFor(length) > seq.blocks.length) {
      throw new Error(
        `PagedKvCache.writePrefill: ${length} positions from ${from}, the cache holds ` +
          `${kv.length} and the sequence ${seq.blocks.length} blocks of ${this.blockSize}`,
      );
    }
    const g = gpu(), bs = this.blockSize, row = this.rowBytes;
    const base = (r * kv.maxLength + from) * row;
    for (let l = 0; l < this.keys.length; l++) {
      for (let j = 0; j * bs < length; j++) {
        const n = Math.min(bs, length - j * bs);
        const dst = seq.blocks[j] * bs * row;
        g.copy(kv.keys[l].buffer, base + j * bs * row, this.keys[l].buffer, dst, n * row);
        g.copy(kv.values[l].buffer, base + j * bs * row, this.values[l].buffer, dst, n * row);
      }
    }
    seq.length = length;
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
        }),
      attend: (q) => pagedAttention(q, this.keys[l], this.values[l], { table, maxLength }),
    });
  }

  dispose(): void {
    for (const t of [...this.keys, ...this.values]) t.dispose();
  }
}
