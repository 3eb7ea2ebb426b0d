/**
 * The vocabulary chunks of the LM head (lm_head_logprob.ts) and how they are grouped: a group is
 * consecutive chunks of one width whose products run as one batched GEMM, logits [count, N, w].
 * One chunk's backward products (d hidden [N, C] over K = w, d weight [w, C] over K = N) are few
 * blocks for a large GPU, 224 of 264 slots at 4,096 rows on an H100; a group of them fills its
 * waves. Groups are formed only where the forward keeps its logits, whose memory the caller has
 * granted (`keepBytes`); recomputed logits stay one chunk at a time within `chunkBytes`.
 */
import { gpu } from "../../gpu/mod.ts";
import { DTYPE_BYTES, type Tensor } from "../tensor.ts";
import { type Gemm, pickTile, tileDims } from "./matmul_kernel.ts";
import { waveSlots } from "./matmul_splits.ts";

/** `count` consecutive chunks of `w` vocabulary columns from column `v0`. */
export interface ChunkGroup {
  v0: number;
  w: number;
  count: number;
}

/** Most chunks a group holds: its products' outputs take count x (N + w) x C x 4 bytes. */
export const MAX_CHUNK_GROUP = 8;

/** The chunks of `cols` columns (the last one narrower) over V, in groups of at most `group`. */
export function chunkGroups(V: number, cols: number, group: number): ChunkGroup[] {
  const full = Math.floor(V / cols), out: ChunkGroup[] = [];
  for (let c = 0; c < full; c += group) {
    out.push({ v0: c * cols, w: cols, count: Math.min(group, full - c) });
  }
  if (V % cols !== 0) out.push({ v0: full * cols, w: V % cols, count: 1 });
  return out;
}

/**
 * Chunks per group for `rows` hidden states of width `hidden` and chunks of `cols` columns: the
 * count up to MAX_CHUNK_GROUP whose backward products best fill the GPU's waves (the fewest
 * that come within 1% of the best). 1 where the GPU's multiprocessor count is unknown.
 */
export function chunkGroupSize(rows: number, hidden: number, cols: number): number {
  const g = gpu(), mp = g.multiprocessors;
  if (g.isCpuAdapter || mp === null) return 1;
  // d hidden [rows, hidden] and d weight [cols, hidden], each `count` times
  const blocks = [[rows, hidden], [cols, hidden]].map(([m, n]) => {
    const t = tileDims(pickTile(2, m, n));
    const slots = waveSlots(mp, t.threads);
    return { blocks: Math.ceil(m / t.bm) * Math.ceil(n / t.bn), slots };
  });
  const fill = (count: number) => {
    let work = 0, room = 0;
    for (const b of blocks) {
      work += b.blocks * count;
      room += Math.ceil((b.blocks * count) / b.slots) * b.slots;
    }
    return work / room;
  };
  const best = Math.max(...Array.from({ length: MAX_CHUNK_GROUP }, (_, i) => fill(i + 1)));
  for (let count = 1; count <= MAX_CHUNK_GROUP; count++) {
    if (fill(count) >= best * 0.99) return count;
  }
  return 1;
}

/** Rows [v0, v0 + w) of the weight copied into `slice`. */
export function sliceRows(weight: Tensor, slice: Tensor, v0: number, w: number): void {
  const C = weight.shape[1], bytes = DTYPE_BYTES[weight.dtype];
  gpu().copy(weight.buffer, v0 * C * bytes, slice.buffer, 0, Math.ceil((w * C * bytes) / 4) * 4);
}

/** Chunk i of a group's logits [count, N, w] as a binding. */
export function chunkAt(z: Tensor, i: number, n: number, w: number) {
  return { buffer: z.buffer, offset: i * n * w * 4, size: n * w * 4 };
}

/** The group's logits [count, N, w] = h [N, C] @ W_c [count, w, C]^T (h shared). */
export function logitsGemm({ w, count }: ChunkGroup, n: number, c: number): Gemm {
  const layout = { transA: false, transB: true, strideA: 0, strideB: w * c };
  return { batch: count, m: n, n: w, k: c, ...layout };
}

/** d hidden per chunk [count, N, C] = dz [count, N, w] @ W_c [count, w, C]. */
export function dHiddenGemm({ w, count }: ChunkGroup, n: number, c: number): Gemm {
  const layout = { transA: false, transB: false, strideA: n * w, strideB: w * c };
  return { batch: count, m: n, n: c, k: w, ...layout };
}

/** d W_c [count, w, C] = dz^T [count, w, N] @ h [N, C] (h shared): rows v0 .. of d weight. */
export function dWeightGemm({ w, count }: ChunkGroup, n: number, c: number): Gemm {
  const layout = { transA: true, transB: false, strideA: n * w, strideB: 0 };
  return { batch: count, m: w, n: c, k: n, ...layout };
}
