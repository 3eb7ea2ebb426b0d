/**
 * Copies between a paged KV cache's blocks and one row of a contiguous cache (KvCache): a block's
 * positions are contiguous in both layouts, so one buffer copy per block, layer and pool.
 */
import { gpu } from "../gpu/mod.ts";
import type { Tensor } from "../tensor/mod.ts";
import type { KvCache, KvDtype } from "./kv_cache.ts";

/** What the copies read of a paged cache (PagedKvCache). */
interface Pools {
  readonly keys: Tensor[];
  readonly values: Tensor[];
  readonly blockSize: number;
  readonly rowBytes: number;
  readonly dtype: KvDtype;
  blocksFor(length: number): number;
}

/** A sequence's blocks (PagedSequence). */
interface Blocks {
  blocks: number[];
}

/** Positions `at`.. of a sequence's blocks and `from`.. of row `row`, `length` of them. */
export interface RowSpan {
  row: number;
  from: number;
  at: number;
  length: number;
}

/**
 * Throws unless `kv` matches `cache` (layers, dtype, the row) and the span fits both: `at`
 * block-aligned, and for `readPrefix` (whole blocks read) `length` too; a write must lie within
 * the positions `kv` has filled.
 */
export function checkRow(
  cache: Pools,
  op: "writePrefill" | "readPrefix",
  seq: Blocks,
  kv: KvCache,
  o: RowSpan,
): void {
  if (
    kv.keys.length !== cache.keys.length || kv.keys[0].dtype !== cache.dtype || o.row >= kv.batch
  ) {
    throw new Error(
      `PagedKvCache.${op}: expected a ${cache.dtype} cache of ${cache.keys.length} ` +
        `layers with a row ${o.row}, got batch ${kv.batch}, ${kv.keys.length} layers ` +
        `${kv.keys[0]?.dtype}`,
    );
  }
  const bs = cache.blockSize, reading = op === "readPrefix";
  const aligned = o.at % bs === 0 && (!reading || o.length % bs === 0);
  const end = reading ? kv.maxLength : kv.length;
  if (!aligned || o.from + o.length > end || cache.blocksFor(o.at + o.length) > seq.blocks.length) {
    throw new Error(
      `PagedKvCache.${op}: ${o.length} positions from ${o.from} (row) and ${o.at} (blocks, ` +
        `aligned to ${bs}${reading ? ", whole blocks" : ""}); the row holds ${end} and the ` +
        `sequence ${seq.blocks.length} blocks`,
    );
  }
}

/** Copies the span from row `o.row` of `kv` into `seq`'s blocks, or back when `toRow`. */
export function copyRow(
  cache: Pools,
  seq: Blocks,
  kv: KvCache,
  o: RowSpan,
  toRow: boolean,
): void {
  const g = gpu(), bs = cache.blockSize, row = cache.rowBytes, first = o.at / bs;
  const base = (o.row * kv.maxLength + o.from) * row;
  for (let l = 0; l < cache.keys.length; l++) {
    for (let j = 0; j * bs < o.length; j++) {
      const n = Math.min(bs, o.length - j * bs);
      const paged = seq.blocks[first + j] * bs * row, flat = base + j * bs * row;
      for (const [a, b] of [[kv.keys[l], cache.keys[l]], [kv.values[l], cache.values[l]]]) {
        if (toRow) g.copy(b.buffer, paged, a.buffer, flat, n * row);
        else g.copy(a.buffer, flat, b.buffer, paged, n * row);
      }
    }
  }
}
