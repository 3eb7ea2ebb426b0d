/**
 * The skinny GEMM of the linear layer when few rows go through it (decoding: M = batch):
 * y [M, N] = x [M, K] @ W [N, K]^T (+ bias), shaders/matmul_skinny.wgsl, with an optional split of
 * K reduced by shaders/matmul_splitk.wgsl. `gemm` routes here by `skinnyPolicy`; GPUs only, since
 * a CPU adapter runs few workgroups at once and prefers the tiled kernel's large blocks.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import type { Binding, KernelSpec } from "../../gpu/mod.ts";
import { Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";

const SPLITK_WG = 256; // invocations per workgroup of the split-K sum (one output each)

/**
 * Threads along N (wgX) and M (wgY), rows of W (tn: 4 or 8) and of x (tm: 1 or 4) per thread,
 * K per stage (4, 8, 12 or 16).
 */
export interface SkinnyConfig {
  wgX: number;
  wgY: number;
  tn: number;
  tm: number;
  bk: number;
}

/** When `gemm` takes the skinny kernel, and how finely it splits K. Mutable for benchmarks. */
export const skinnyPolicy = {
  /**
   * Largest M routed here. One H100, 2026-11-27, 0.5B decode steps (f16 weights and KV cache,
   * 128 + 256, `generate_device.ts --skinny-max-m`): 64 rows took 6.21 ms here, where all-tiled
   * had taken 7.57; past 64 rows this tile holds two row blocks, and 80, 96 and 128 rows took
   * 9.40, 9.73-9.75 and 10.45 ms with the MLP's products here against 8.06, 8.35-8.36 and 9.26
   * with them tiled (small weights here and the LM head tiled in both).
   */
  maxM: 64,
  /**
   * Largest M for small weights (at most `smallWeights` elements in all, as the attention's
   * projections), whose few tiled blocks leave the GPU idle: at 256 rows of f16 products on an
   * H100 (2026-11-27, `skinny_device.ts --m 64,128,256 --f16`) 896 x 896 took 28 us here against
   * 36.6 tiled and 128 x 896 11.1 against 30.8, while 4864 x 896 took 128 against 101; a 256-row
   * decode step went from 16.30 / 16.42 to 14.98 / 15.03 ms.
   */
  maxMSmall: 256,
  smallWeights: 2 ** 21,
  /**
   * A product whose tiled blocks (8 x 8 per thread, rows over half used) fill at least this many
   * waves takes the tiled kernel anyway: the LM head at 64 rows, 1,187 blocks of 64 x 128. One
   * H100 (2026-11-27, 0.5B, B 64, f16 weights and KV cache, 128 + 256, `generate_device.ts`,
   * alternated twice): 5.53 / 5.53 ms per step with it skinny, 5.40 / 5.40 tiled (the same
   * tokens); `profile_generate.ts` put the tiled LM head at 0.58 ms per step (30 TFLOP/s).
   */
  tiledWaves: 2,
  /**
   * A product whose K is at least this many times its N takes the tiled kernel too (when its
   * tiles are used over half, as above): the MLP's down projection at 64 rows, whose tiled
   * blocks split K 32 ways. One H100 (2026-11-27, 0.5B, B 64, f16, `profile_generate.ts`):
   * 0.84-0.93 ms per step tiled against 1.01 skinny; whole steps 5.27 -> 5.23 ms, and at 1.5B
   * 14.2 -> 13.6.
   */
  tiledDeepK: 4,
  /**
   * Workgroups wanted per product: fewer blocks split K. null: three per multiprocessor where the
   * GPU's count is known, else 264. On an H100 (132 multiprocessors) three per multiprocessor
   * (396) took a 0.5B decode step (f16 weights and KV cache) from 7.28-7.35 to 6.81-6.83 ms at
   * B 64 and from 21.95 to 20.27 ms at B 256; 330, 360 and 462 fell between, 528 and 1056 were
   * slower (`generate_device.ts --target-groups`).
   */
  targetGroups: null as number | null,
  /** Fewest K stages per split, so a split's loads and stores stay amortised. */
  minStages: 3,
};

/** Sizes of one skinny product. */
export interface SkinnyDims {
  m: number;
  n: number;
  k: number;
}

export interface SkinnyOptions {
  bias?: Tensor | null;
  /** f32 [M, N] added after the bias (never `out` itself). */
  residual?: Tensor | null;
  config?: SkinnyConfig;
  /** Number of K splits; default from `skinnyPolicy`. */
  splits?: number;
  /** When K is split, the second pass in place of `sumSplits` (`SplitSum`). */
  sum?: SplitSum;
}

/**
 * A product's second pass when its K is split: part [splits, M, N] into the output, with the
 * product's bias and residual, in place of `sumSplits` (a caller fuses it with what reads the
 * output: linear_norm.ts). Called only for a product split whole (no head run apart).
 */
export type SplitSum = (part: Tensor, splits: number) => void;

/** The register tile for M rows: just enough thread rows to cover M (at most 64 per block). */
export function skinnyConfig(m: number): SkinnyConfig {
  if (m <= 4) return { wgX: 16, wgY: 4, tn: 4, tm: 1, bk: 16 };
  if (m <= 16) return { wgX: 16, wgY: 4, tn: 4, tm: 4, bk: 16 };
  if (m <= 32) return { wgX: 16, wgY: 8, tn: 8, tm: 4, bk: 16 };
  // 64 x 64 blocks of 128 threads: on an H200 at M = 64, within 5% of the best of six tiles on
  // each decode product of Qwen2.5-0.5B (128-wide blocks were up to 50% slower on N = 896).
  return { wgX: 8, wgY: 16, tn: 8, tm: 4, bk: 16 };
}

/** Whether a stage of `bk` K fits the skinny kernels: skinny_tile.wgsl writes out K / 4 <= 4 vec4s. */
export function skinnyStageFits(bk: number): boolean {
  return bk % 4 === 0 && bk > 0 && bk <= 16;
}

function checkConfig(c: SkinnyConfig): void {
  const g = gpu();
  const bm = c.wgY * c.tm, bn = c.wgX * c.tn;
  const shared = 2 * (bm + bn) * (c.bk / 4 + 1) * 16;
  const nt = c.wgX * c.wgY, slots = (rows: number) => Math.ceil(rows * c.bk / 4 / nt);
  const ok = skinnyStageFits(c.bk) && (c.tm === 1 || c.tm === 4) &&
    (c.tn === 4 || c.tn === 8) && slots(bm) <= 4 && slots(bn) <= 4 &&
    c.wgX * c.wgY <= g.limits.maxComputeInvocationsPerWorkgroup &&
    shared <= g.limits.maxComputeWorkgroupStorageSize;
  if (!ok) throw new Error(`matmul: skinny config ${JSON.stringify(c)} is invalid on this device`);
}

/** The workgroups a skinny product aims at (`skinnyPolicy.targetGroups`). */
export function skinnyTargetGroups(): number {
  const mp = gpu().multiprocessors;
  return skinnyPolicy.targetGroups ?? (mp === null ? 264 : 3 * mp);
}

/** Splits of K that bring the product near `skinnyTargetGroups()` workgroups. */
export function skinnySplits(d: SkinnyDims, c: SkinnyConfig): number {
  const blocks = Math.ceil(d.n / (c.wgX * c.tn)) * Math.ceil(d.m / (c.wgY * c.tm));
  const stages = Math.ceil(d.k / c.bk);
  const most = Math.max(1, Math.floor(stages / skinnyPolicy.minStages));
  return Math.max(1, Math.min(Math.ceil(skinnyTargetGroups() / blocks), most));
}

/** Largest M the skinny kernel takes against weights of `weights` elements (`skinnyPolicy`). */
export function skinnyMaxM(weights: number): number {
  const p = skinnyPolicy;
  return weights <= p.smallWeights ? p.maxMSmall : p.maxM;
}

/** Whether `gemm` should run this product (b: the weight [N, K]) on the skinny kernel. */
export function skinnyApplies(
  a: Tensor,
  b: Tensor,
  d: { batch: number; m: number; k: number; transA: boolean; transB: boolean },
): boolean {
  return !gpu().isCpuAdapter && d.batch === 1 && !d.transA && d.transB && d.k % 4 === 0 &&
    d.m <= skinnyMaxM(b.size) && a.dtype !== "i32" && b.dtype !== "i32";
}

/**
 * Records y = x @ w^T (+ bias) (+ residual) into `out` (f32 [M, N]); x [M, K], w [N, K],
 * K % 4 == 0, residual f32 [M, N].
 */
export function gemmSkinny(
  x: Tensor,
  w: Tensor,
  out: Tensor,
  d: SkinnyDims,
  options: SkinnyOptions = {},
): void {
  const { m, n, k } = d;
  if (m === 0 || n === 0) return;
  if (k % 4 !== 0) throw new Error(`matmul: the skinny kernel needs K % 4 == 0, got K=${k}`);
  const c = options.config ?? skinnyConfig(m);
  checkConfig(c);
  const bias = options.bias ?? null, residual = options.residual ?? null;
  const k4 = k / 4, stage4 = c.bk / 4;
  const stages = Math.max(1, Math.ceil(k4 / stage4));
  const wanted = Math.max(1, Math.min(options.splits ?? skinnySplits(d, c), stages));
  const splitK4 = Math.ceil(stages / wanted) * stage4;
  const splits = Math.max(1, Math.ceil(k4 / splitK4));
  const f16 = x.dtype === "f16" || w.dtype === "f16" || bias?.dtype === "f16";
  const vec = (t: Tensor) => `vec4<${t.dtype}>`;
  const spec: KernelSpec = {
    shader: "matmul_skinny",
    entry: splits === 1 ? epilogueEntry(bias, residual) : "main",
    f16,
    defines: {
      WG_X: c.wgX,
      WG_Y: c.wgY,
      TN: c.tn,
      TM: c.tm,
      BK: c.bk,
      X4: vec(x),
      W4: vec(w),
      BIAS_T: bias?.dtype ?? "f32",
    },
  };
  const workgroups: [number, number, number] = [
    Math.ceil(n / (c.wgX * c.tn)),
    Math.ceil(m / (c.wgY * c.tm)),
    splits,
  ];
  const g = gpu();
  if (splits === 1) {
    g.dispatch(spec, {
      params: packParams([m, n, k4, splitK4, 0]),
      buffers: epilogueBuffers([x.buffer, w.buffer, out.buffer], bias, residual),
      workgroups,
    });
    return;
  }
  const part = Tensor.empty([splits, m, n], "f32", "matmul_split");
  g.dispatch(spec, {
    params: packParams([m, n, k4, splitK4, m * n]),
    buffers: [x.buffer, w.buffer, part.buffer],
    workgroups,
  });
  if (options.sum) options.sum(part, splits);
  else sumSplits(part, out, { m, n, splits, bias, residual });
  part.dispose();
}

/** The entry point of a GEMM epilogue: `main`, `main_bias`, `main_resid`, `main_bias_resid`. */
export function epilogueEntry(bias: Tensor | null, residual: Tensor | null): string {
  return `main${bias ? "_bias" : ""}${residual ? "_resid" : ""}`;
}

/**
 * `base` then the epilogue's operands: the bias, then the residual (with a gap in place of a
 * missing bias, whose binding number the residual entries leave unused).
 */
export function epilogueBuffers(
  base: GPUBuffer[],
  bias: Tensor | null,
  residual: Tensor | null,
): (GPUBuffer | null)[] {
  return epilogueBindings(base, bias?.buffer ?? null, residual?.buffer ?? null);
}

/** `epilogueBuffers` over bindings (byte ranges of buffers). */
function epilogueBindings<B extends Binding>(
  base: B[],
  bias: B | null,
  residual: B | null,
): (B | null)[] {
  const out: (B | null)[] = [...base];
  if (bias || residual) out.push(bias);
  if (residual) out.push(residual);
  return out;
}

/**
 * out [M, N] = sum over s of part [s, M, N] (+ bias [N]) (+ residual [M, N]), summed in split
 * order (shaders/matmul_splitk.wgsl): the second pass of every split-K product. With `offset`
 * and `ld`, the sums go to out's (and come from residual's) elements from `offset` on, rows `ld`
 * apart, and the bias from element offset % ld on: a block of a wider product. The offsets in
 * bytes must suit the device's binding alignment.
 */
export function sumSplits(
  part: Tensor,
  out: Tensor,
  d: {
    m: number;
    n: number;
    splits: number;
    bias: Tensor | null;
    residual?: Tensor | null;
    offset?: number;
    ld?: number;
  },
): void {
  const residual = d.residual ?? null, offset = d.offset ?? 0, ld = d.ld ?? d.n;
  const g = gpu();
  const at = (t: Tensor, elements: number): Binding => {
    const bytes = elements * (t.dtype === "f16" ? 2 : 4);
    if (bytes % g.limits.minStorageBufferOffsetAlignment !== 0) {
      throw new Error(
        `matmul: a split sum from element ${elements} of ${t.label} (${bytes} bytes) is not ` +
          `aligned to ${g.limits.minStorageBufferOffsetAlignment} bytes`,
      );
    }
    return bytes === 0 ? t.buffer : { buffer: t.buffer, offset: bytes };
  };
  const buffers = epilogueBindings<Binding>(
    [part.buffer, at(out, offset)],
    d.bias ? at(d.bias, offset % ld) : null,
    residual ? at(residual, offset) : null,
  );
  g.dispatch({
    shader: "matmul_splitk",
    entry: epilogueEntry(d.bias, residual),
    f16: d.bias?.dtype === "f16",
    defines: { WG: SPLITK_WG, BIAS_T: d.bias?.dtype ?? "f32" },
  }, {
    params: packParams([d.m * d.n, d.n, d.splits, ld]),
    buffers,
    workgroups: grid1d(d.m * d.n, SPLITK_WG),
  });
}
