/**
 * Dispatch layer of the matmul family: tile configurations and the batched GEMM launch over raw
 * buffers with explicit sizes and strides (K splits as `matmul_splits.ts` plans them; column sums
 * in `colsum.ts`). No autograd here; the differentiable ops in `matmul.ts` are built on these.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import type { Defines, KernelSpec } from "../../gpu/mod.ts";
import { Tensor } from "../tensor.ts";
import {
  epilogueBuffers,
  epilogueEntry,
  gemmSkinny,
  skinnyApplies,
  skinnyPolicy,
  type SplitSum,
  sumSplits,
} from "./matmul_skinny.ts";
import { catBuffers, catDefines, type GemmCat } from "./matmul_cat_kernel.ts";
import {
  kSlices,
  type SplitPlan,
  type SplitTail,
  type TileDims,
  tiledPlan,
  waveSlots,
} from "./matmul_splits.ts";

/** Threads per workgroup (WG_X along N, WG_Y along M), register tile per thread, K step. */
export interface TileConfig {
  wgX: number;
  wgY: number;
  tm: number; // 4 or 8
  tn: number; // 4 or 8
  bk: number; // 8: matmul_tile.wgsl writes out a stage's k steps
}

export type TileName = "large" | "wide" | "tall" | "medium" | "small";

/**
 * large: 128x128 blocks of 256 threads, 8x8 per thread (the throughput case); wide / tall:
 * 64x128 / 128x64 blocks of 128 threads for products with few rows / columns; medium: 64x64
 * blocks of 64 threads, 8x8 each (CPU adapters); small: 32x32 blocks of 64 threads, 4x4 each,
 * for products as thin as a LoRA rank. A K step of 8 keeps the double-buffered tiles small
 * (17 KiB at most) and, on Mesa's CPU adapter, the shader compile time bearable (it grows
 * quickly with the unrolled K step); on an H100 a K step of 16 was slower for every tile. The
 * tile writes out the 8 k steps of a stage (2026-11-27, H100, 4096^3: 28.4 TFLOP/s with them
 * in a loop of one trip, 31.3 without it, bench/README.md).
 */
export const TILES: Record<TileName, TileConfig> = {
  large: { wgX: 16, wgY: 16, tm: 8, tn: 8, bk: 8 },
  wide: { wgX: 16, wgY: 8, tm: 8, tn: 8, bk: 8 },
  tall: { wgX: 8, wgY: 16, tm: 8, tn: 8, bk: 8 },
  medium: { wgX: 8, wgY: 8, tm: 8, tn: 8, bk: 8 },
  small: { wgX: 8, wgY: 8, tm: 4, tn: 4, bk: 8 },
};

export function tileShape(t: TileConfig): { bm: number; bn: number; sharedBytes: number } {
  const bm = t.wgY * t.tm, bn = t.wgX * t.tn;
  const sharedBytes = 2 * t.bk * (bm / 4 + 1) * 16 + 2 * t.bk * (bn / 4 + 1) * 16;
  return { bm, bn, sharedBytes };
}

function checkTile(t: TileConfig): void {
  const { bm, bn, sharedBytes } = tileShape(t);
  const nt = t.wgX * t.wgY;
  const g = gpu();
  // matmul_tile.wgsl writes out the 8 k steps of a stage and holds at most 4 staged slots per
  // operand.
  const ok = (t.tm === 4 || t.tm === 8) && (t.tn === 4 || t.tn === 8) && t.bk === 8 &&
    bm * t.bk / 4 <= 4 * nt && bn * t.bk / 4 <= 4 * nt && (bm * t.bk / 4) % nt === 0 &&
    (bn * t.bk / 4) % nt === 0 && bm * t.bk / 4 >= nt && bn * t.bk / 4 >= nt &&
    nt <= g.limits.maxComputeInvocationsPerWorkgroup &&
    sharedBytes <= g.limits.maxComputeWorkgroupStorageSize;
  if (!ok) throw new Error(`matmul: tile config ${JSON.stringify(t)} is invalid on this device`);
}

/**
 * The tile for a product by its output shape. Measured on an H100 over the GEMMs of a Qwen2.5-0.5B
 * training step at 3,072 and 6,144 rows (bench/gemm_shapes_device.ts): 128x128 blocks, with K
 * split when they are few, were within about 10% of the best of eight tiles on every product,
 * and 1.5x to 2.8x faster than the 64x64 / 32x32 blocks that more blocks per product called
 * for; thin outputs take the tile that wastes the least of its block.
 */
export function pickTile(_batch: number, m: number, n: number): TileConfig {
  // A CPU adapter runs a handful of workgroups at a time: the 64x64 block amortises its barriers
  // best there (measured 3.5x faster than 32x32 on llvmpipe for a [1280,64]x[64,192] product).
  if (gpu().isCpuAdapter) return TILES.medium;
  if (m <= 32 || n <= 32) return TILES.small;
  if (n <= 64) return TILES.tall;
  if (m <= 64) return TILES.wide;
  return TILES.large;
}

/** One batched product over raw buffers: C[b] = op(A[b]) @ op(B[b]) (+ bias[n]). */
export interface Gemm {
  batch: number;
  m: number;
  n: number;
  k: number;
  transA: boolean;
  transB: boolean;
  /** Elements between batch entries; 0 shares one matrix across the batch. */
  strideA: number;
  strideB: number;
  /** Causal attention's products: the blocks and K ranges that only meet masked entries. */
  causal?: CausalBlocks | null;
}

/**
 * Row i of op(A) (packed query heads: position i % period) sees keys up to off + i % period.
 * "scores": C [rows, keys], whose blocks beyond every row's reach are left unwritten (the row
 * kernels never read them); "byKeys": K runs over keys (P V, dS K) and stops at the block rows'
 * reach; "keySide": C's rows are keys and K runs over one head's `period` query rows (P^T dO,
 * dS^T Q), starting at the first that sees the block's first key. The terms left out are
 * products with P or dS entries that are exactly 0.
 */
export interface CausalBlocks {
  kind: "scores" | "byKeys" | "keySide";
  period: number;
  off: number;
}

const CAUSAL_KINDS = { scores: 1, byKeys: 2, keySide: 3 } as const;

function checkCausal(d: Gemm, cat: GemmCat | null): number {
  const c = d.causal;
  if (!c) return 0;
  if (cat) throw new Error("matmul: a K-joined product takes no causal blocks");
  if (!(Number.isInteger(c.period) && c.period > 0 && Number.isInteger(c.off))) {
    throw new Error(
      `matmul: causal blocks need a whole period > 0 and offset, got ${c.period}, ${c.off}`,
    );
  }
  if (c.kind === "keySide" && d.k !== c.period) {
    throw new Error(`matmul: causal keySide runs K over one head's ${c.period} rows, got K ${d.k}`);
  }
  return CAUSAL_KINDS[c.kind];
}

export interface GemmOptions {
  bias?: Tensor | null;
  /**
   * f32, laid out as the output, added after the bias in the epilogue (once, in the split-sum
   * pass when K is split). Never the output itself: WebGPU forbids aliasing a read_write binding.
   */
  residual?: Tensor | null;
  /** A tile forces the tiled kernel; without one few-row linear products take the skinny one. */
  tile?: TileName | TileConfig;
  /** K splits of a single product, tiled or skinny; default from their policies (tests force it). */
  splits?: number;
  /** A last wave run apart, the rest whole (`splitPlan`; tests force it). */
  tail?: SplitTail | null;
  /** A second product joined along K (shaders/matmul_cat.wgsl); single products only. */
  cat?: GemmCat | null;
  /** When the whole product splits K, its second pass in place of `sumSplits`. */
  sum?: SplitSum;
}

/**
 * Whether the tiled GEMM reads an operand four elements at a time (one 16-byte load, 8 in f16)
 * where its layout allows (`vec4`), and whether a product of whole blocks loads without bounds
 * checks (`exact`, see `exactBlocks`). Mutable for tests and before/after benches.
 */
export const loadPolicy = { vec4: true, exact: true };

/**
 * Equivalent forms of the tiled kernel's K loop (matmul_tile.wgsl): the loads of A / B without
 * bounds checks where every block is whole (`exactA` / `exactB`) and the k step of a stage before
 * which the next stage's global reads are issued (`fetchAt`, 0 or 4). Results are the same bit for
 * bit; NVIDIA's compiler schedules each layout best with its own form, so the forms are picked per
 * layout (op(A) transposed, op(B) transposed) and operand type by measurement
 * (`bench/gemm_forms_device.ts`). Mutable for that bench.
 */
export interface TileForm {
  exactA: boolean;
  exactB: boolean;
  fetchAt: 0 | 4;
}

export type GemmLayout = "nn" | "nt" | "tn" | "tt";
/** A layout, and `_f16` where an operand is stored in f16 (the frozen LoRA base's products). */
export type FormKey = GemmLayout | `${GemmLayout}_f16`;

/**
 * Measured on one H100 (2026-11-27, `gemm_forms_device.ts`, medians of two rounds):
 * A @ B ran 42.2 TFLOP/s at 4096^3 and 42.1 at 6144 x 4864 x 896 with its reads issued before k
 * step 4, against 36.7 and 37.0 before step 0; x @ W^T (42.9 / 42.6) and A^T @ B (40.1 / 40.4)
 * ran best, or within 2% of it, as they were. With B in f16 (`--b-f16`) A's loads keep their
 * checks: A @ B 40.6 / 39.3 (from 38.2 / 37.8 with the f32 form), x @ W^T 40.0 at 4096^3 (from
 * 37.3) and within 0.5% of the best at 6144 x 4864 x 896. `tt`, `tn_f16` and `tt_f16` were not
 * measured (the trainer's f16 products are the frozen base's forward and input gradient); they
 * keep the first form.
 */
export const tileForms: Record<FormKey, TileForm> = {
  nn: { exactA: true, exactB: true, fetchAt: 4 },
  nt: { exactA: true, exactB: true, fetchAt: 0 },
  tn: { exactA: true, exactB: true, fetchAt: 0 },
  tt: { exactA: true, exactB: true, fetchAt: 0 },
  nn_f16: { exactA: false, exactB: true, fetchAt: 4 },
  nt_f16: { exactA: false, exactB: true, fetchAt: 0 },
  tn_f16: { exactA: true, exactB: true, fetchAt: 0 },
  tt_f16: { exactA: true, exactB: true, fetchAt: 0 },
};

export function gemmLayout(d: { transA: boolean; transB: boolean }): GemmLayout {
  return `${d.transA ? "t" : "n"}${d.transB ? "t" : "n"}` as GemmLayout;
}

export function formKey(layout: GemmLayout, f16: boolean): FormKey {
  return f16 ? `${layout}_f16` : layout;
}

/**
 * Whether every block and K step of a product is whole: M, N and the K loop (both products of a
 * K-joined one) multiples of the block's. Split K needs nothing more, since each split's share is
 * a whole number of K steps.
 */
export function exactBlocks(d: { m: number; n: number }, k: number, tile: TileConfig): boolean {
  const { bm, bn } = tileShape(tile);
  return loadPolicy.exact && d.m % bm === 0 && d.n % bn === 0 && k % tile.bk === 0;
}

/**
 * Which operands the tile reads as vec4s: those whose contiguous dimension (K when stored along
 * k, else M or N) and batch stride are multiples of 4, so that every read is aligned and four k
 * never straddle a split's end; in a K-joined product both of a pair, laid out alike, with K1 and
 * K2 multiples of 4 when read along k, so four k never straddle the seam either.
 */
export function vecReads(d: Gemm, cat: GemmCat | null): { a: boolean; b: boolean } {
  if (!loadPolicy.vec4) return { a: false, b: false };
  const ks = cat ? [d.k, cat.k] : [d.k];
  const fits = (alongK: boolean, other: number) =>
    alongK ? ks.every((k) => k % 4 === 0) : other % 4 === 0;
  return {
    a: (!cat || cat.transA === d.transA) && d.strideA % 4 === 0 && fits(!d.transA, d.m),
    b: (!cat || cat.transB === d.transB) && d.strideB % 4 === 0 && fits(d.transB, d.n),
  };
}

/**
 * Whether a product the skinny kernel could take runs better tiled: its tiled blocks (8 x 8 per
 * thread) use over half of their rows, and they either fill `skinnyPolicy.tiledWaves` waves or
 * K is at least `skinnyPolicy.tiledDeepK` times N (deep splits of K).
 */
function prefersTiled(d: Gemm): boolean {
  const mp = gpu().multiprocessors;
  const tile = pickTile(d.batch, d.m, d.n);
  const { bm, bn } = tileShape(tile);
  if (mp === null || tile.tm * tile.tn < 64 || 2 * d.m <= bm) return false;
  if (d.k >= skinnyPolicy.tiledDeepK * d.n) return true;
  const blocks = d.batch * Math.ceil(d.m / bm) * Math.ceil(d.n / bn);
  return blocks >= skinnyPolicy.tiledWaves * waveSlots(mp, tile.wgX * tile.wgY);
}

/** Records the GEMM dispatches writing `out` (f32, [batch, M, N] contiguous). */
export function gemm(a: Tensor, b: Tensor, out: Tensor, d: Gemm, options: GemmOptions = {}): void {
  const residual = options.residual ?? null;
  if (residual) checkResidual(residual, out);
  const cat = options.cat ?? null;
  if (cat && d.batch !== 1) throw new Error(`matmul: a K-joined product is single, got ${d.batch}`);
  if (d.batch === 0 || d.m === 0 || d.n === 0) return;
  const causal = checkCausal(d, cat);
  if (!cat && !causal && options.tile === undefined && skinnyApplies(a, b, d) && !prefersTiled(d)) {
    gemmSkinny(a, b, out, d, {
      bias: options.bias,
      residual,
      splits: options.splits,
      sum: options.sum,
    });
    return;
  }
  const tile = typeof options.tile === "string"
    ? TILES[options.tile]
    : options.tile ?? pickTile(d.batch, d.m, d.n);
  checkTile(tile);
  const { bm, bn } = tileShape(tile);
  const bias = options.bias ?? null;
  const f16 = [a, b, bias, cat?.a, cat?.b].some((t) => t?.dtype === "f16");
  const k = d.k + (cat?.k ?? 0); // the whole K loop, both products of a K-joined one
  const vec = vecReads(d, cat);
  const exact = exactBlocks(d, k, tile);
  const kernel: Omit<KernelSpec, "shader"> = {
    entry: epilogueEntry(bias, residual),
    f16,
    defines: {
      ...tileDefines(tile, { ...d, a, b, vec, exact, f16 }),
      BIAS_T: bias?.dtype ?? "f32",
      CAUSAL: causal,
      ...(cat
        ? { ...catDefines(cat), A2_V: vecType(cat.a, vec.a), B2_V: vecType(cat.b, vec.b) }
        : {}),
    },
  };
  const spec: KernelSpec = cat
    ? { shader: "matmul_cat", ...kernel }
    : { shader: "matmul", ...kernel };
  // The fields after the shared eight: matmul_cat.wgsl's seam K1 and factor on op(B2), or
  // matmul.wgsl's causal period and offset.
  const more = cat
    ? [d.k, { f32: cat.scale }]
    : [d.causal?.period ?? 0, { i32: d.causal?.off ?? 0 }];
  const launch: Launch = { spec, a, b, cat, d, k, tile, more };
  const plan = planFor(d, k, tile, causal !== 0, options);
  const tail = plan.tail;
  const by = Math.ceil(d.m / bm), bx = Math.ceil(d.n / bn);
  if (!tail) {
    if (kSlices(launch.k, tile.bk, plan.splits).splits > 1) {
      const at = { mOff: 0, nOff: 0 };
      splitProduct(launch, plan.splits, at, out, bias, residual, options.sum);
    } else wholeProduct(launch, d.batch, [bx, by], out, bias, residual);
    return;
  }
  // The head (whole waves of blocks) runs unsplit into `out`; the tail's lines of blocks run
  // split into partials and are summed into their rows or columns of `out`.
  checkTail(tail, d, by, bx, causal !== 0);
  const [headY, headX] = tail.along === "m" ? [by - tail.blocks, bx] : [by, bx - tail.blocks];
  wholeProduct(launch, 1, [headX, headY], out, bias, residual);
  const at = tail.along === "m" ? { mOff: headY * bm, nOff: 0 } : { mOff: 0, nOff: headX * bn };
  splitProduct(launch, tail.splits, at, out, bias, residual);
}

/** What an operand's array element holds: its type, or a vec4 of it where it is read so. */
const vecType = (t: Tensor, vec: boolean) => vec ? `vec4<${t.dtype}>` : t.dtype;

/**
 * The tiled kernel's defines for a tile (matmul_tile.wgsl) over operands `a` and `b` in a layout:
 * their types and vec4 reads, and the layout's form (`tileForms`) where every block is whole.
 */
export function tileDefines(
  tile: TileConfig,
  o: {
    transA: boolean;
    transB: boolean;
    a: Tensor;
    b: Tensor;
    vec: { a: boolean; b: boolean };
    exact: boolean;
    f16: boolean;
  },
): Defines {
  const form = tileForms[formKey(gemmLayout(o), o.f16)];
  return {
    WG_X: tile.wgX,
    WG_Y: tile.wgY,
    TM: tile.tm,
    TN: tile.tn,
    BK: tile.bk,
    TRANS_A: o.transA,
    TRANS_B: o.transB,
    A_T: o.a.dtype,
    B_T: o.b.dtype,
    VEC_A: o.vec.a,
    VEC_B: o.vec.b,
    EXACT_A: o.exact && form.exactA,
    EXACT_B: o.exact && form.exactB,
    FETCH_HALF: form.fetchAt / 4,
    A_V: vecType(o.a, o.vec.a),
    B_V: vecType(o.b, o.vec.b),
  };
}

/** One product's operands and kernel, as `gemm` launches them. */
interface Launch {
  spec: KernelSpec;
  a: Tensor;
  b: Tensor;
  cat: GemmCat | null;
  d: Gemm;
  k: number; // the whole K loop, both products of a K-joined one
  tile: TileConfig;
  more: (number | { f32: number } | { i32: number })[];
}

/** The tile's sizes that the split model reads. */
export function tileDims(t: TileConfig): TileDims {
  const { bm, bn } = tileShape(t);
  return { bm, bn, bk: t.bk, threads: t.wgX * t.wgY };
}

function planFor(
  d: Gemm,
  k: number,
  tile: TileConfig,
  causal: boolean,
  options: GemmOptions,
): SplitPlan {
  if (options.tail) {
    if ((options.splits ?? 1) !== 1) {
      throw new Error(`matmul: a split tail runs the rest whole, got splits ${options.splits}`);
    }
    return { splits: 1, tail: options.tail }; // checked against the product in `gemm`
  }
  // Causal blocks stay whole: a skipped block would leave its split partials unwritten.
  if (causal) return { splits: 1, tail: null };
  if (options.splits !== undefined) return { splits: options.splits, tail: null };
  return tiledPlan({ ...d, k }, tileDims(tile));
}

function checkTail(t: SplitTail, d: Gemm, by: number, bx: number, causal: boolean): void {
  const lines = t.along === "m" ? by : bx;
  const why = d.batch !== 1
    ? `a single product, got ${d.batch}`
    : causal
    ? "no causal blocks"
    : !(Number.isInteger(t.blocks) && t.blocks >= 1 && t.blocks < lines)
    ? `between 1 and ${lines - 1} of ${lines} lines of blocks along ${t.along}, got ${t.blocks}`
    : !(Number.isInteger(t.splits) && t.splits >= 1)
    ? `a whole number of splits, got ${t.splits}`
    : null;
  if (why) throw new Error(`matmul: a split tail needs ${why}`);
}

/** Blocks [0, grid x) x [0, grid y) of `batch` products, K whole, written into `out`. */
function wholeProduct(
  l: Launch,
  batch: number,
  [x, y]: [number, number],
  out: Tensor,
  bias: Tensor | null,
  residual: Tensor | null,
): void {
  const { d, k } = l, g = gpu();
  const buffers = catBuffers(
    epilogueBuffers([l.a.buffer, l.b.buffer, out.buffer], bias, residual),
    l.cat,
  );
  // A dispatch's z dimension is capped by the device; larger batches go in slices.
  const maxZ = g.limits.maxComputeWorkgroupsPerDimension;
  for (let off = 0; off < batch; off += maxZ) {
    g.dispatch(l.spec, {
      params: packParams([d.m, d.n, k, d.strideA, d.strideB, d.m * d.n, off, k, ...l.more, 0, 0]),
      buffers,
      workgroups: [x, y, Math.min(maxZ, batch - off)],
    });
  }
}

/**
 * The blocks from row mOff and column nOff on (multiples of the block), K split: partials
 * [splits, rows, cols], then summed with the epilogue into those rows and columns of `out`.
 */
function splitProduct(
  l: Launch,
  asked: number,
  { mOff, nOff }: { mOff: number; nOff: number },
  out: Tensor,
  bias: Tensor | null,
  residual: Tensor | null,
  sum?: SplitSum,
): void {
  const { d, k } = l, g = gpu();
  if (d.batch !== 1) throw new Error(`matmul: split-K needs a single product, got ${d.batch}`);
  const { kSplit, splits } = kSlices(l.k, l.tile.bk, asked);
  const rows = d.m - mOff, cols = d.n - nOff;
  const { bm, bn } = tileShape(l.tile);
  const part = Tensor.empty([splits, rows, cols], "f32", "matmul_split");
  // Blocks past the first row or column read their offsets (a variant of their own).
  const defines = mOff > 0 || nOff > 0 ? { ...l.spec.defines, OFFSETS: true } : l.spec.defines;
  g.dispatch({ ...l.spec, entry: "main", defines }, {
    params: packParams([
      ...[d.m, d.n, k, d.strideA, d.strideB, rows * cols, 0, kSplit],
      ...[...l.more, mOff, nOff],
    ]),
    buffers: catBuffers([l.a.buffer, l.b.buffer, part.buffer], l.cat),
    workgroups: [Math.ceil(cols / bn), Math.ceil(rows / bm), splits],
  });
  const offset = mOff * d.n + nOff;
  if (sum) sum(part, splits);
  else sumSplits(part, out, { m: rows, n: cols, splits, bias, residual, offset, ld: d.n });
  part.dispose();
}

function checkResidual(r: Tensor, out: Tensor): void {
  if (r.dtype !== "f32" || r.size !== out.size) {
    throw new Error(
      `matmul: the residual must be f32 with the output's ${out.size} elements, got ` +
        `${r.dtype} [${r.shape.join(", ")}]`,
    );
  }
  if (r.buffer === out.buffer) {
    throw new Error("matmul: the residual must not be the output buffer (a read_write binding)");
  }
}

/** Allocates C [...outShape] and records the GEMM into it. */
export function gemmNew(
  a: Tensor,
  b: Tensor,
  outShape: readonly number[],
  d: Gemm,
  options: GemmOptions = {},
): Tensor {
  const out = Tensor.empty(outShape, "f32", "matmul");
  gemm(a, b, out, d, options);
  return out;
}
