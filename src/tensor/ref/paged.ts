/**
 * CPU references of the paged KV cache's kernels (shaders/paged_rope_qk_cache.wgsl and
 * attention_decode.wgsl with PAGED): a row's keys are gathered through its block ids into a
 * contiguous row, then the contiguous references apply.
 */
import { attentionRef } from "./attention.ts";
import { ropeQKRef } from "./rope.ts";

/** A pool [numBlocks, blockSize, Hkv, D] and the table rows [length, block ids...]. */
export interface PagedLayout {
  blockSize: number;
  kvHeads: number;
  headDim: number;
  /** Per row: its key length and its block ids (at least ceil(length / blockSize)). */
  rows: { length: number; blocks: number[] }[];
}

/** Element offset in a pool of key s of row b. */
export function pagedOffset(layout: PagedLayout, b: number, s: number): number {
  const { blockSize: bs, kvHeads, headDim } = layout;
  const blk = layout.rows[b].blocks[Math.floor(s / bs)];
  return (blk * bs + (s % bs)) * kvHeads * headDim;
}

/** Row b's first `length` keys of a pool as a contiguous [maxLength, Hkv, D] slab of `out`. */
function gather(pool: Float32Array, layout: PagedLayout, maxLength: number): Float32Array {
  const row = layout.kvHeads * layout.headDim;
  const out = new Float32Array(layout.rows.length * maxLength * row);
  layout.rows.forEach((r, b) => {
    for (let s = 0; s < r.length; s++) {
      const src = pagedOffset(layout, b, s);
      out.set(pool.subarray(src, src + row), (b * maxLength + s) * row);
    }
  });
  return out;
}

/** Decode attention of q [B, 1, Hq, D] over each row's own keys in the pools: [B, 1, Hq, D]. */
export function pagedAttentionRef(
  q: Float32Array,
  keys: Float32Array,
  values: Float32Array,
  layout: PagedLayout,
  options: { queryHeads: number; scale?: number },
): Float32Array {
  const B = layout.rows.length;
  const L = Math.max(...layout.rows.map((r) => r.length));
  const mask = new Int32Array(B * L);
  layout.rows.forEach((r, b) => mask.fill(1, b * L, b * L + r.length));
  const dims = { B, T: 1, S: L, Hq: options.queryHeads, Hkv: layout.kvHeads, D: layout.headDim };
  const k = gather(keys, layout, L), v = gather(values, layout, L);
  return attentionRef(dims, q, k, v, { keyMask: mask, causal: false, scale: options.scale }).out;
}

/**
 * q [B, 1, Hq, D] and k [B, 1, Hkv, D] rotated at `positions` [B], and the pools with the rotated
 * k and v written at key length - 1 of each row (new arrays; the inputs are left as they are).
 */
export function pagedRopeCacheRef(
  qkv: { q: Float32Array; k: Float32Array; v: Float32Array; positions: Int32Array },
  pools: { keys: Float32Array; values: Float32Array },
  layout: PagedLayout,
  options: { queryHeads: number; theta: number },
): { q: Float32Array; k: Float32Array; keys: Float32Array; values: Float32Array } {
  const B = layout.rows.length, H = layout.kvHeads, D = layout.headDim;
  const shapes = { q: [B, 1, options.queryHeads, D], k: [B, 1, H, D] } as const;
  const [q, k] = ropeQKRef(qkv.q, qkv.k, qkv.positions, shapes, { theta: options.theta });
  const keys = pools.keys.slice(), values = pools.values.slice();
  layout.rows.forEach((r, b) => {
    const dst = pagedOffset(layout, b, r.length - 1);
    keys.set(k.subarray(b * H * D, (b + 1) * H * D), dst);
    values.set(qkv.v.subarray(b * H * D, (b + 1) * H * D), dst);
  });
  return { q, k, keys, values };
}
