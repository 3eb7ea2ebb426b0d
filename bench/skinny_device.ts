/**
 * The decode-step linear products of the Qwen2.5-0.5B shape on a real GPU: the skinny kernel over
 * register tiles and K splits against the tiled kernel, to tune `skinnyPolicy`. One JSON line per
 * shape with the best variants (all of them with --all), spot-checked against f64 sums.
 *
 *   deno run -A bench/skinny_device.ts [--m 64[,256,...]] [--f16] [--reps 20] [--all]
 *
 * --f16: only the f16-weight products (what decoding runs), default skinny tile and K splits
 * against the tiled kernel, at each --m.
 */
import { initGpu } from "../src/gpu/mod.ts";
import { gemm, pickTile } from "../src/tensor/mod.ts";
import { gemmSkinny, skinnyConfig } from "../src/tensor/mod.ts";
import { Tensor } from "../src/tensor/mod.ts";
import { rng } from "../src/testing/mod.ts";
import { timeGpu, warmGpu } from "./gpu_timer.ts";
import { SKINNY_TILES } from "./bench_model.ts";

const flag = (name: string) => Deno.args.includes(`--${name}`);
const num = (name: string, d: number) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : d;
};
const reps = num("reps", 20);
const g = await initGpu();

const SHAPES: [string, number, number][] = [
  ["qo", 896, 896],
  ["kv", 128, 896],
  ["gate_up", 4864, 896],
  ["down", 896, 4864],
  ["lm_head", 151936, 896],
];
/** The 64-row tiles of `SKINNY_TILES` (at 64 rows and more). */
const CONFIGS = Object.fromEntries(
  ["bm64_bn128_t8", "bm64_bn64_t4", "bm64_bn64_t8", "bm64_bn32_t4"].map((
    t,
  ) => [t, SKINNY_TILES[t]]),
);

function data(n: number, seed: number): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => r() * 2 - 1);
}

/** Largest relative error of a few entries of y = x @ w^T against f64 sums. */
async function spot(y: Tensor, x: Float32Array, w: Float32Array, m: number, n: number, k: number) {
  const out = await y.toArray() as Float32Array;
  let worst = 0;
  for (let t = 0; t < 16; t++) {
    const i = (t * 7919) % m, j = (t * 104729) % n;
    let s = 0;
    for (let p = 0; p < k; p++) s += x[i * k + p] * w[j * k + p];
    worst = Math.max(worst, Math.abs(out[i * n + j] - s) / (Math.abs(s) + 1e-3));
  }
  return worst;
}

async function bench(m: number, name: string, n: number, k: number, f16: boolean) {
  const xs = data(m * k, 1), ws = data(n * k, 2);
  const x = Tensor.from(xs, [m, k]).keep();
  const w = Tensor.from(ws, [n, k], f16 ? "f16" : "f32").keep();
  const y = Tensor.empty([m, n]).keep();
  const flop = 2 * m * n * k;
  const rows: { variant: string; us: number; tflops: number; err?: number }[] = [];
  const time = async (variant: string, fn: () => void) => {
    const { medianMs } = await timeGpu(fn, { reps: 3, perSpan: reps });
    rows.push({
      variant,
      us: +(medianMs * 1000).toFixed(1),
      tflops: +(flop / medianMs / 1e9).toFixed(2),
    });
  };
  const d = { batch: 1, m, n, k, transA: false, transB: true, strideA: 0, strideB: 0 };
  const tile = pickTile(1, m, n);
  const tiled = () => gemm(x, w, y, d, { tile });
  await warmGpu(tiled);
  await time(`tiled_${tile.wgX * tile.tn}`, tiled);
  rows[0].err = await spot(y, xs, ws, m, n, k);
  const configs = f16 ? { default: skinnyConfig(m) } : { default: skinnyConfig(m), ...CONFIGS };
  for (const [cname, config] of Object.entries(configs)) {
    if (m < 64 && cname !== "default") continue;
    for (const splits of [undefined, 1, 2, 4, 8, 16, 32]) {
      if (f16 && splits !== undefined) continue;
      const variant = `${cname}_s${splits ?? "auto"}`;
      try {
        await time(variant, () => gemmSkinny(x, w, y, { m, n, k }, { config, splits }));
        rows.at(-1)!.err = await spot(y, xs, ws, m, n, k);
      } catch (e) {
        rows.push({ variant, us: NaN, tflops: 0, err: NaN });
        console.error(variant, (e as Error).message);
      }
    }
  }
  rows.sort((a, b) => a.us - b.us);
  const show = flag("all") ? rows : rows.slice(0, 4);
  const auto = rows.find((r) => r.variant === "default_sauto")!;
  const tiledRow = rows.find((r) => r.variant.startsWith("tiled"))!;
  console.log(JSON.stringify({ shape: name, m, n, k, f16, tiled: tiledRow, auto, best: show }));
  for (const t of [x, w, y]) t.dispose();
}

const mArg = Deno.args.indexOf("--m");
const ms = mArg >= 0 ? Deno.args[mArg + 1].split(",").map(Number) : [64, 1, 16, 128];
const onlyF16 = flag("f16");
for (const m of onlyF16 ? [] : ms) {
  for (const [name, n, k] of SHAPES) {
    if (m !== 64 && name !== "gate_up" && name !== "lm_head" && name !== "down") continue;
    await bench(m, name, n, k, false);
  }
}
if (g.hasF16) {
  for (const m of onlyF16 ? ms : [64]) {
    for (const [name, n, k] of SHAPES) await bench(m, name, n, k, true);
  }
}
