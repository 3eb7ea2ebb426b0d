/**
 * Matmul throughput on a real GPU, one JSON line per measurement:
 *   deno run -A bench/matmul_device.ts [--sizes=2048,4096,8192] [--reps=10] [--sweep[=N]]
 *     [--exact=0]
 * f32 C = A @ B at each size, x @ W^T and A^T @ B in f32 at 4096, the f16-weight path (x f32 @
 * W^T, W [N, K] f16) at 4096 when the GPU has shader-f16, and with --sweep several tile
 * configurations at N (default 4096; for tuning). Each result is checked against a few output
 * entries computed in f64 on the CPU; times come from timestamp queries (wall time around a sync
 * otherwise), `reps` products per timed span. `--exact=0` keeps the bounds checks on products of
 * whole blocks (`loadPolicy.exact`), for before/after figures.
 */
import { gpu, initGpu } from "../src/gpu/mod.ts";
import { loadPolicy, matmulTiled } from "../src/tensor/mod.ts";
import { type TileConfig, TILES, tileShape } from "../src/tensor/mod.ts";
import { f16BitsToF32, f32ToF16Bits, Tensor } from "../src/tensor/mod.ts";
import { rng } from "../src/testing/mod.ts";
import { timeGpu } from "./gpu_timer.ts";

const args = new Map(
  Deno.args.map((a) => a.replace(/^--/, "").split("=") as [string, string]),
);
const sizes = (args.get("sizes") ?? "2048,4096,8192").split(",").map(Number);
const reps = Number(args.get("reps") ?? 10);
if (args.get("exact") === "0") loadPolicy.exact = false;
const g = await initGpu();

function emit(o: Record<string, unknown>): void {
  console.log(JSON.stringify({ adapter: g.adapterName, ...o }));
}

/** Random values, rounded through f16 when the operand will be stored as f16. */
function data(n: number, seed: number, f16: boolean): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const v = r() * 2 - 1;
    out[i] = f16 ? f16BitsToF32(f32ToF16Bits(v)) : v;
  }
  return out;
}

/** Largest relative error over sampled entries of C = A @ op(B) against f64 sums. */
function spotCheck(
  a: Float32Array,
  b: Float32Array,
  c: Float32Array,
  n: number,
  t: { transA: boolean; transB: boolean },
): number {
  const r = rng(99);
  let worst = 0;
  for (let s = 0; s < 16; s++) {
    const i = Math.floor(r() * n), j = Math.floor(r() * n);
    let sum = 0, mag = 0;
    for (let k = 0; k < n; k++) {
      const p = (t.transA ? a[k * n + i] : a[i * n + k]) * (t.transB ? b[j * n + k] : b[k * n + j]);
      sum += p;
      mag += Math.abs(p);
    }
    worst = Math.max(worst, Math.abs(c[i * n + j] - sum) / Math.max(mag, 1e-30));
  }
  return worst;
}

async function measure(
  name: string,
  n: number,
  tile: TileConfig,
  weightF16: boolean,
  layout = { transA: false, transB: weightF16 },
) {
  const { bm, bn, sharedBytes } = tileShape(tile);
  const label =
    `${bm}x${bn}x${tile.bk} (${tile.wgX}x${tile.wgY} threads, ${tile.tm}x${tile.tn} each)`;
  if (sharedBytes > g.limits.maxComputeWorkgroupStorageSize) {
    emit({ name, n, tile: label, skipped: `needs ${sharedBytes} B of workgroup memory` });
    return;
  }
  const a = data(n * n, 1, false), b = data(n * n, 2, weightF16);
  const A = Tensor.from(a, [n, n]), B = Tensor.from(b, [n, n], weightF16 ? "f16" : "f32");
  const opts = { ...layout, tile };
  const C = matmulTiled(A, B, opts);
  const err = spotCheck(a, b, (await C.toArray()) as Float32Array, n, layout);
  C.dispose();
  const perSpan = Math.min(100, Math.max(1, Math.round(reps * (4096 / n) ** 3)));
  const t = await timeGpu(() => matmulTiled(A, B, opts).dispose(), { reps: 5, perSpan });
  const tflops = 2 * n ** 3 / (t.medianMs * 1e9);
  emit({
    name,
    n,
    tile: label,
    ms: +t.medianMs.toFixed(4),
    tflops: +tflops.toFixed(3),
    timer: t.gpuTimed ? "timestamp" : "wall",
    spot_max_rel_err: err,
    ok: err < (weightF16 ? 1e-3 : 1e-4),
  });
  A.dispose();
  B.dispose();
  g.pool.trim();
}

for (const n of sizes) await measure("matmul_f32", n, TILES.large, false);
// The linear layer's other layouts: x @ W^T (forward) and g^T @ x (weight gradient); A @ B is
// its input gradient g @ W.
await measure("matmul_f32_wT", 4096, TILES.large, false, { transA: false, transB: true });
await measure("matmul_f32_tA", 4096, TILES.large, false, { transA: true, transB: false });
if (g.hasF16) await measure("matmul_f16_weight", 4096, TILES.large, true);
else emit({ name: "matmul_f16_weight", skipped: "no shader-f16" });

if (args.has("sweep")) {
  const configs: TileConfig[] = [
    TILES.large,
    { ...TILES.large, wgX: 16, wgY: 8 }, // 64x128
    { ...TILES.large, wgX: 8, wgY: 16 }, // 128x64
    TILES.medium,
    TILES.small,
  ];
  const n = Number(args.get("sweep")) || 4096;
  for (const tile of configs) await measure("matmul_f32_sweep", n, tile, false);
}
await gpu().sync();
