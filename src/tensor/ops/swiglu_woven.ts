/**
 * The first half of a SwiGLU MLP off the tape as one tiled GEMM over both weights
 * (shaders/matmul_swiglu.wgsl): the gate and up weights are read as one woven weight whose rows
 * alternate between them in groups of half a block, so each thread holds gate and up of the same
 * units and writes silu(g) * u itself. Where K splits, one pass sums the partials and activates
 * (swiglu_split_sum.wgsl's `main_woven`). The result equals
 * `swiglu(linear(x, Wg, bg), linear(x, Wu, bu))` with the same tile and K slices bit for bit.
 */
import { gpu, type KernelSpec, packParams } from "../../gpu/mod.ts";
import { fmtShape, sameShape, shapeSize, Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";
import {
  loadPolicy,
  type TileConfig,
  tileDefines,
  tileDims,
  type TileName,
  TILES,
  tileShape,
} from "./matmul_kernel.ts";
import { kSlices, tiledSplits } from "./matmul_splits.ts";
import { biasPair } from "./swiglu_linear.ts";

/**
 * Whether `swigluProducts` weaves (benchmarks: before/after) and up to how many rows; past the
 * fused skinny op's few rows each product alone makes few blocks, which one product over both
 * spreads better, while many rows fill the GPU either way and there the two products' own plans
 * (a last wave apart) ran faster: old_log_prob at 6,144 rows (`grpo_step_device.ts --micro=16`,
 * one H100) 0.644-0.650 s as two products, 0.670-0.671 woven in 128 x 128 blocks (the plan then;
 * its `--woven-max-m` sets this bound). `wholeBlocks`: 64 x 128 blocks per
 * multiprocessor from which the product runs them unsplit (`swigluWovenPlan`). `tile` / `splits`
 * force a tile or K splits on every woven product (benchmarks).
 */
export const swigluWovenPolicy = {
  enabled: true,
  maxM: 256,
  wholeBlocks: 1.5,
  tile: null as TileName | null,
  splits: null as number | null,
};

/** Whether `swigluProducts` weaves a product of `m` rows. */
export const swigluWovenApplies = (m: number) =>
  swigluWovenPolicy.enabled && m <= swigluWovenPolicy.maxM;

export interface SwigluWovenOptions {
  biasGate?: Tensor | null;
  biasUp?: Tensor | null;
  /** The tile (8 columns a thread, so each holds gate and up); default `swigluWovenPlan`'s. */
  tile?: TileName | TileConfig;
  /** K splits; default `swigluWovenPlan`'s. */
  splits?: number;
}

/**
 * The tile and K splits (null: the wave model's) for M rows of N units: 64 x 128 blocks unsplit,
 * with the activation in their epilogue, where they number `wholeBlocks` per multiprocessor;
 * else 128 x 128 blocks split as the wave model says. CPU adapters take their own tile. One H100,
 * 0.5B decode steps (f16, `generate_device.ts`, ms a step): 128 rows (152 blocks of 64 x 128)
 * 7.61 this way, 8.27 with 64 x 128 unsplit, 8.75 / 8.13 / 8.46 with 128 x 128 in 1 / 2 / 4
 * splits; 192 rows 10.52 with 64 x 128 unsplit, 11.37 split in two; 256 rows 12.37 with 64 x 128
 * unsplit or in two, 12.72 with 128 x 128 in three, 13.19 unsplit.
 */
export function swigluWovenPlan(m: number, n: number): { tile: TileConfig; splits: number | null } {
  const forced = swigluWovenPolicy.splits;
  if (gpu().isCpuAdapter) return { tile: TILES.medium, splits: forced };
  if (swigluWovenPolicy.tile) return { tile: TILES[swigluWovenPolicy.tile], splits: forced };
  const mp = gpu().multiprocessors;
  const wideBlocks = Math.ceil(m / 64) * Math.ceil(n / 64);
  if (mp !== null && wideBlocks >= swigluWovenPolicy.wholeBlocks * mp) {
    return { tile: TILES.wide, splits: forced ?? 1 };
  }
  return { tile: TILES.large, splits: forced };
}

/** Throws, naming the operand, unless the shapes and types fit one woven product. */
function checkOperands(x: Tensor, wg: Tensor, wu: Tensor, o: SwigluWovenOptions): void {
  const [bg, bu] = [o.biasGate ?? null, o.biasUp ?? null];
  const float = (t: Tensor) => t.dtype === "f32" || t.dtype === "f16";
  const why = wg.rank !== 2 || !sameShape(wg.shape, wu.shape) || wg.dtype !== wu.dtype
    ? "w_gate and w_up must be the same 2-D [N, K] of one type"
    : x.rank < 1 || x.shape.at(-1) !== wg.shape[1]
    ? `x must end in K = ${wg.shape[1]}`
    : ![x, wg].every(float)
    ? "x and the weights must be f32 or f16"
    : [bg, bu].some((b) => b && (b.rank !== 1 || b.shape[0] !== wg.shape[0] || !float(b)))
    ? `each bias must be f32 or f16 [${wg.shape[0]}]`
    : bg && bu && bg.dtype !== bu.dtype
    ? "the two biases must have one type"
    : null;
  if (why) {
    const desc = (t: Tensor | null) => t ? `${fmtShape(t.shape)} ${t.dtype}` : "none";
    throw new Error(
      `swigluWoven: ${why}; got x ${desc(x)}, w_gate ${desc(wg)}, w_up ${desc(wu)}, ` +
        `bias_gate ${desc(bg)}, bias_up ${desc(bu)}`,
    );
  }
}

/**
 * y [..., N] f32 = silu(x Wg^T + bg) * (x Wu^T + bu) for x [..., K] f32, Wg and Wu [N, K] (f32 or
 * f16, alike), biases [N]. No gradient: the caller (`swigluProducts`) keeps taped inputs apart.
 */
export function swigluWoven(
  x: Tensor,
  wGate: Tensor,
  wUp: Tensor,
  options: SwigluWovenOptions = {},
): Tensor {
  const [n, k] = wGate.shape, lead = x.shape.slice(0, -1), m = shapeSize(lead);
  checkOperands(x, wGate, wUp, options);
  // A tile given keeps the wave model's splits for it: the plan's go with the plan's tile.
  const plan = options.tile === undefined
    ? swigluWovenPlan(m, n)
    : { tile: typeof options.tile === "string" ? TILES[options.tile] : options.tile, splits: null };
  const tile = plan.tile;
  if (tile.tn !== 8) {
    throw new Error(`swigluWoven: the tile needs 8 columns a thread, got ${JSON.stringify(tile)}`);
  }
  const { bm, bn } = tileShape(tile), h = bn / 2;
  const wide = 2 * h * Math.ceil(n / h); // the woven weight's rows
  const y = Tensor.empty([...lead, n], "f32", "swiglu_woven");
  if (m === 0) return y;
  const pair = biasPair(options.biasGate ?? null, options.biasUp ?? null, n);
  const f16 = [x, wGate, wUp, pair?.gate].some((t) => t?.dtype === "f16");
  const vec = k % 4 === 0 && loadPolicy.vec4;
  const exact = loadPolicy.exact && m % bm === 0 && n % h === 0 && k % tile.bk === 0;
  const layout = { transA: false, transB: true, a: x, b: wGate, vec: { a: vec, b: vec } };
  const kernel = (entry: string): KernelSpec => ({
    shader: "matmul_swiglu",
    entry,
    f16,
    defines: {
      ...tileDefines(tile, { ...layout, exact, f16 }),
      BIAS_T: pair?.dtype ?? "f32",
      CAUSAL: 0,
    },
  });
  const asked = options.splits ?? plan.splits ?? swigluWovenPolicy.splits ??
    tiledSplits({ batch: 1, m, n: wide, k }, tileDims(tile));
  const { kSplit, splits } = kSlices(k, tile.bk, asked);
  const grid: [number, number, number] = [wide / bn, Math.ceil(m / bm), splits];
  const params = (out: number) =>
    packParams([m, wide, k, 0, 0, out, 0, kSplit, 0, { i32: 0 }, 0, 0, n, 0, 0, 0]);
  const biases = pair ? [pair.gate.buffer, pair.up.buffer] : [null, null];
  const g = gpu();
  if (splits === 1) {
    g.dispatch(kernel(pair ? "main_swiglu_bias" : "main_swiglu"), {
      params: params(0),
      buffers: [x.buffer, wGate.buffer, y.buffer, biases[0], null, wUp.buffer, biases[1]],
      workgroups: grid,
    });
  } else {
    const part = Tensor.empty([splits, m, wide], "f32", "swiglu_woven.part");
    g.dispatch(kernel("main"), {
      params: params(m * wide),
      buffers: [x.buffer, wGate.buffer, part.buffer, null, null, wUp.buffer],
      workgroups: grid,
    });
    g.dispatch({
      shader: "swiglu_split_sum",
      entry: pair ? "main_woven_bias" : "main_woven",
      f16: pair?.dtype === "f16",
      defines: { WG: 256, BIAS_T: pair?.dtype ?? "f32" },
    }, {
      params: packParams([m * n, n, splits, h]),
      buffers: [part.buffer, y.buffer, ...biases],
      workgroups: grid1d(m * n, 256),
    });
    part.dispose();
  }
  pair?.zero?.dispose();
  return y;
}
