/**
 * How a single tiled product spreads over the GPU: how many ways K is split (`tiledSplits`,
 * `waveSplits`) and whether its last, partly filled wave of blocks runs apart, split over K, while
 * the rest runs whole (`splitPlan`). Plain arithmetic over the tile's sizes; `gemm`
 * (matmul_kernel.ts) launches what these pick.
 */
import { gpu } from "../../gpu/mod.ts";

/** The tile's sizes that the wave model needs: block rows and columns, K step, threads. */
export interface TileDims {
  bm: number;
  bn: number;
  bk: number;
  threads: number;
}

/** Sizes of one single product. */
export interface SplitShape {
  batch: number;
  m: number;
  n: number;
  k: number;
}

/** The last `blocks` rows (`m`) or columns (`n`) of blocks, run apart with K split `splits` ways. */
export interface SplitTail {
  along: "m" | "n";
  blocks: number;
  splits: number;
}

/** K splits of the whole product; with a tail, 1: the rest runs whole. */
export interface SplitPlan {
  splits: number;
  tail: SplitTail | null;
}

/** Below this many blocks a single product splits K (`tiledSplits`, no wave model). */
const MIN_BLOCKS = 240;

/** When a single tiled product splits K. Mutable for benchmarks. */
export const splitPolicy = {
  /**
   * Fewest K steps per split. A LoRA backward product such as dB [896, 32] = g^T l with K = 3072
   * rows makes 28 blocks of 32x32: a fraction of a large GPU's multiprocessors, each walking all
   * of K; split, the same product runs as many blocks as MIN_BLOCKS asks for.
   */
  minStages: 16,
  /** Most K splits the wave model considers. */
  maxSplits: 32,
  /** Whether a GPU whose multiprocessors are known uses the wave model (`waveSplits`). */
  waves: true,
  /**
   * Cost of one element of a K-split partial (written by the product, read by the sum pass), in
   * K steps of a wave. Fitted on an H100 over every product of a Qwen2.5-0.5B and -1.5B training
   * step at 3,072 rows, timed with 1 to 8 splits: with it the model picks a split count within 6%
   * of the fastest for each.
   */
  elementCost: 2e-6,
  /** Whether `splitPlan` may run a product's last wave apart (before/after benches). */
  tails: true,
};

/** Blocks of the product, and the most K splits its K steps allow. */
function extent(d: SplitShape, t: TileDims) {
  const by = Math.ceil(d.m / t.bm), bx = Math.ceil(d.n / t.bn);
  const stages = Math.ceil(d.k / t.bk);
  const most = Math.max(1, Math.floor(stages / splitPolicy.minStages));
  return { by, bx, stages, most };
}

/**
 * K splits of a single product. On a GPU whose multiprocessor count is known, the wave model
 * (`waveSplits`); otherwise enough splits to bring a product of few blocks near MIN_BLOCKS.
 */
export function tiledSplits(d: SplitShape, tile: TileDims): number {
  const g = gpu();
  if (d.batch !== 1 || g.isCpuAdapter) return 1;
  const { by, bx, most } = extent(d, tile);
  const blocks = by * bx;
  if (g.multiprocessors !== null && splitPolicy.waves) {
    return waveSplits({ ...d, blocks, tile, most, multiprocessors: g.multiprocessors });
  }
  if (blocks >= MIN_BLOCKS) return 1;
  return Math.max(1, Math.min(Math.ceil(MIN_BLOCKS / blocks), most));
}

/**
 * How this GPU runs a single product: `splitPlan` where its multiprocessor count is known (and
 * the wave model is on), else `tiledSplits`' count without a tail.
 */
export function tiledPlan(d: SplitShape, tile: TileDims): SplitPlan {
  const g = gpu();
  if (d.batch !== 1 || g.isCpuAdapter) return { splits: 1, tail: null };
  if (g.multiprocessors === null || !splitPolicy.waves) {
    return { splits: tiledSplits(d, tile), tail: null };
  }
  const align = g.limits.minStorageBufferOffsetAlignment;
  return splitPlan(d, tile, { multiprocessors: g.multiprocessors, align });
}

/**
 * The K slice per split for `asked` splits of a K loop of `k` in steps of `bk` (whole steps each),
 * and how many splits that makes.
 */
export function kSlices(k: number, bk: number, asked: number): { kSplit: number; splits: number } {
  const stages = Math.ceil(k / bk);
  const wanted = Math.max(1, Math.min(asked, stages));
  const kSplit = Math.ceil(stages / wanted) * bk;
  return { kSplit, splits: Math.ceil(k / kSplit) };
}

/** Blocks the GPU runs at once: a multiprocessor holds 512 threads of these register-heavy tiles. */
export function waveSlots(multiprocessors: number, threads: number): number {
  return multiprocessors * Math.max(1, Math.floor(512 / threads));
}

/** Modelled time of `blocks` blocks of `elements` outputs over `stages` K steps in `s` splits. */
function cost(blocks: number, elements: number, stages: number, s: number, slots: number) {
  const partials = s > 1 ? splitPolicy.elementCost * elements * (s + 1) : 0;
  return Math.ceil((blocks * s) / slots) * Math.ceil(stages / s) + partials;
}

/** The cheapest split count of at most `most` (ties within 2% go to fewer splits), and its cost. */
function cheapest(
  blocks: number,
  elements: number,
  stages: number,
  most: number,
  slots: number,
  from = 1,
): [number, number] {
  let best = from, bestCost = cost(blocks, elements, stages, from, slots);
  for (let s = from + 1; s <= most; s++) {
    const c = cost(blocks, elements, stages, s, slots);
    if (c < bestCost * 0.98) [best, bestCost] = [s, c];
  }
  return [best, bestCost];
}

/**
 * The split count with the least modelled time: the product runs in waves of as many blocks as
 * the GPU holds at once, each wave as long as one block's share of K; splitting adds waves' worth
 * of blocks but shortens them, and costs its partials. A product whose last wave would be nearly
 * empty gains most: on an H100 the 0.5B MLP's weight gradient at 3,072 rows (266 blocks, two over
 * one wave's worth) ran 2.82 ms whole and 1.88 ms in 7 splits (`bench/gemm_splits_device.ts`).
 */
export function waveSplits(
  o: { m: number; n: number; k: number; blocks: number; tile: TileDims; most: number } & {
    multiprocessors: number;
  },
): number {
  const slots = waveSlots(o.multiprocessors, o.tile.threads);
  const stages = Math.ceil(o.k / o.tile.bk);
  const most = Math.min(o.most, splitPolicy.maxSplits);
  return cheapest(o.blocks, o.m * o.n, stages, most, slots)[0];
}

/**
 * The plain split count (`waveSplits`), or, where it models cheaper, whole waves of blocks run
 * unsplit and the rows or columns of blocks past them as a split-K product of their own: 266
 * blocks (38 rows of 7) on 264 slots run 37 rows whole in one wave and the last row in 32 slices
 * of K, where splitting all of it 7 ways took 8 waves of 1/7 of K for 7.05 waves of work. A batch
 * of products is not split.
 * `align`: the bytes a binding offset must be a multiple of (the tail's sum writes from its
 * first row or column on); a tail whose offset is not aligned is not considered.
 */
export function splitPlan(
  d: SplitShape,
  tile: TileDims,
  o: { multiprocessors: number; align: number },
): SplitPlan {
  if (d.batch !== 1) return { splits: 1, tail: null };
  const { by, bx, stages, most: allowed } = extent(d, tile);
  const most = Math.min(allowed, splitPolicy.maxSplits);
  const slots = waveSlots(o.multiprocessors, tile.threads);
  const blocks = by * bx;
  let [splits, best] = cheapest(blocks, d.m * d.n, stages, most, slots);
  let tail: SplitTail | null = null;
  if (!splitPolicy.tails || most < 2) return { splits, tail };
  for (const along of ["m", "n"] as const) {
    const [lines, width, size] = along === "m" ? [by, bx, tile.bm] : [bx, by, tile.bn];
    for (let waves = 1; waves * slots < blocks; waves++) {
      const head = Math.floor((waves * slots) / width); // whole lines of blocks in those waves
      if (head < 1 || head >= lines) continue;
      // The tail's sums start at row head * bm (offset head * bm * n) or column head * bn (2-byte
      // f16 bias elements included).
      const offset = along === "m" ? head * size * d.n * 4 : head * size * 2;
      if (offset % o.align !== 0) continue;
      const rest = along === "m" ? (d.m - head * size) * d.n : d.m * (d.n - head * size);
      const [s, c] = cheapest((lines - head) * width, rest, stages, most, slots, 2);
      const total = Math.ceil((head * width) / slots) * stages + c;
      if (total < best * 0.98) {
        [best, splits, tail] = [total, 1, { along, blocks: lines - head, splits: s }];
      }
    }
  }
  return { splits, tail };
}
