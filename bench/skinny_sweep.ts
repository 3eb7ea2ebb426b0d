/**
 * Every skinny tile and K split of the decode step's f16-weight products (Qwen2.5-0.5B shape) and
 * the tiled kernel, timed interleaved: each variant is checked once against f64 sums, then all of
 * them run round after round with no readback between (one timestamp span per variant and round,
 * read at the end), after 1.5 s of the same work. A GPU that waits on readbacks between variants
 * drops its clock (an H100 went from 1,980 to 345-1,000 MHz within a `skinny_device.ts --f16`
 * run), which reorders variants that differ by less than that.
 *
 * `qkv_fused` is the fused q/k/v product with biases (`qkvLinear`) over its own tiles and splits,
 * its split sum included.
 *
 *   deno run -A bench/skinny_sweep.ts [--m 64,128,256] [--shapes qkv,qo,kv,gate_up,down,qkv_fused]
 *     [--rounds 5] [--per-span 40] [--tiled-splits 1,2,4: the tiled kernel's three blocks so split]
 */
import { initGpu } from "../src/gpu/mod.ts";
import {
  gemm,
  gemmSkinny,
  pickTile,
  type QkvBiases,
  qkvLinear,
  qkvLinearConfig,
  type QkvWeights,
  scope,
  skinnyConfig,
  Tensor,
  TILES,
} from "../src/tensor/mod.ts";
import { rng } from "../src/testing/mod.ts";
import { arg, FUSED_TILES, SKINNY_TILES } from "./bench_model.ts";
import { GpuTimer, warmGpu } from "./gpu_timer.ts";

const SHAPES: Record<string, [number, number]> = {
  qkv: [1152, 896],
  qo: [896, 896],
  kv: [128, 896],
  gate_up: [4864, 896],
  // gate and up as one product (their weights side by side), as cuBLAS runs them in
  // torch_matmul.py --decode
  gate_up_cat: [9728, 896],
  down: [896, 4864],
};
const SPLITS = [undefined, 1, 2, 4, 8];
const rounds = Number(arg("rounds", "5")), perSpan = Number(arg("per-span", "40"));
const g = await initGpu();
if (!g.hasF16) throw new Error("skinny_sweep: needs shader-f16 (decode products are f16)");

function data(n: number, seed: number): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => r() * 2 - 1);
}

/** Largest relative error of 16 outputs of y = x w^T (+ bias) against f64 sums of the stored halves. */
async function spot(
  y: Tensor,
  x: Float32Array,
  w: Float32Array,
  d: { m: number; n: number; k: number },
  bias?: Float32Array,
) {
  const out = await y.toArray() as Float32Array;
  let worst = 0;
  for (let t = 0; t < 16; t++) {
    const i = (t * 7919) % d.m, j = (t * 104729) % d.n;
    let s = bias ? bias[j] : 0;
    for (let p = 0; p < d.k; p++) s += x[i * d.k + p] * w[j * d.k + p];
    worst = Math.max(worst, Math.abs(out[i * d.n + j] - s) / (Math.abs(s) + 1e-3));
  }
  return worst;
}

type Variant = readonly [name: string, run: () => void, check: () => Promise<number>];

/** Checks each variant once, then times them all interleaved; prints one JSON line. */
async function timeAll(head: Record<string, unknown>, variants: Variant[], flop: number) {
  const errs = new Map<string, number>();
  const usable: Variant[] = [];
  for (const v of variants) {
    try {
      errs.set(v[0], await v[2]());
      usable.push(v);
    } catch (e) {
      console.error(`${JSON.stringify(head)} ${v[0]}: ${(e as Error).message}`);
    }
  }
  let i = 0;
  if (usable.length === 0) throw new Error(`${JSON.stringify(head)}: no variant ran`);
  await warmGpu(() => usable[i++ % usable.length][1](), 1500);
  const timer = new GpuTimer(rounds * usable.length);
  for (let r = 0; r < rounds; r++) {
    for (const [, run] of usable) {
      await timer.begin();
      for (let c = 0; c < perSpan; c++) run();
      await timer.end();
    }
  }
  const ms = await timer.read();
  timer.destroy();
  const rows = usable.map(([v], j) => {
    const mine = Array.from({ length: rounds }, (_, r) => ms[r * usable.length + j] / perSpan)
      .sort((a, b) => a - b);
    const med = mine[Math.floor(rounds / 2)];
    return {
      variant: v,
      us: +(med * 1000).toFixed(1),
      tflops: +(flop / med / 1e9).toFixed(2),
      err: errs.get(v),
    };
  });
  const byName = (v: string) => rows.find((r) => r.variant === v);
  rows.sort((a, b) => a.us - b.us);
  console.log(JSON.stringify({
    ...head,
    tiled: rows.find((r) => r.variant.startsWith("tiled")),
    auto: byName("default_sauto"),
    best: rows.slice(0, 6),
    worst_err: Math.max(...rows.map((r) => r.err ?? 0)),
  }));
}

async function sweep(m: number, name: string) {
  const [n, k] = SHAPES[name];
  const xs = data(m * k, 1);
  const x = Tensor.from(xs, [m, k]).keep();
  const w = Tensor.from(data(n * k, 2), [n, k], "f16").keep();
  const ws = await w.toArray() as Float32Array;
  const y = Tensor.empty([m, n]).keep();
  const d = { batch: 1, m, n, k, transA: false, transB: true, strideA: 0, strideB: 0 };
  const tile = pickTile(1, m, n);
  const variant = (v: string, run: () => void): Variant => [v, run, () => {
    run();
    return spot(y, xs, ws, { m, n, k });
  }];
  const variants = [variant(`tiled_${tile.wgX * tile.tn}`, () => gemm(x, w, y, d, { tile }))];
  // The tiled kernel's other blocks and K splits (--tiled-splits 1,2,...; none by default).
  for (const splits of arg("tiled-splits", "").split(",").filter(Boolean).map(Number)) {
    for (const name of ["wide", "tall", "large"] as const) {
      const t = TILES[name];
      variants.push(variant(
        `tiled_${t.wgY * t.tm}x${t.wgX * t.tn}_s${splits}`,
        () => gemm(x, w, y, d, { tile: t, splits }),
      ));
    }
  }
  for (const [t, config] of Object.entries({ default: skinnyConfig(m), ...SKINNY_TILES })) {
    for (const splits of SPLITS) {
      variants.push(variant(
        `${t}_s${splits ?? "auto"}`,
        () => gemmSkinny(x, w, y, { m, n, k }, { config, splits }),
      ));
    }
  }
  await timeAll({ shape: name, m, n, k }, variants, 2 * m * n * k);
  for (const t of [x, w, y]) t.dispose();
}

/** The fused q/k/v product with biases (`qkvLinear`, Qwen2.5-0.5B: 896, 128 and 128 rows). */
async function sweepQkv(m: number) {
  const k = 896, ns = [896, 128, 128];
  const xs = data(m * k, 1);
  const x = Tensor.from(xs, [m, k]).keep();
  const w = ns.map((n, i) => Tensor.from(data(n * k, 2 + i), [n, k], "f16").keep());
  const b = ns.map((n, i) => Tensor.from(data(n, 5 + i), [n]).keep());
  const wq = await w[0].toArray() as Float32Array, bq = await b[0].toArray() as Float32Array;
  const weights = w as unknown as QkvWeights, biases = b as unknown as QkvBiases;
  const variants: Variant[] = [];
  for (const [t, c] of Object.entries({ default: qkvLinearConfig(m), ...FUSED_TILES })) {
    for (const splits of [...SPLITS, 3, 6]) {
      const run = () => scope(() => void qkvLinear(x, weights, biases, { config: c, splits }));
      variants.push([`${t}_s${splits ?? "auto"}`, run, async () => {
        const q = scope(() => qkvLinear(x, weights, biases, { config: c, splits })[0].keep());
        const err = await spot(q, xs, wq, { m, n: ns[0], k }, bq);
        q.dispose();
        return err;
      }]);
    }
  }
  const n = ns[0] + ns[1] + ns[2];
  await timeAll({ shape: "qkv_fused", m, n, k }, variants, 2 * m * n * k);
  for (const t of [x, ...w, ...b]) t.dispose();
}

const names = [...Object.keys(SHAPES), "qkv_fused"];
for (const m of arg("m", "64,128,256").split(",").map(Number)) {
  for (const name of arg("shapes", names.join(",")).split(",")) {
    if (!names.includes(name)) throw new Error(`--shapes ${name}: one of ${names}`);
    await (name === "qkv_fused" ? sweepQkv(m) : sweep(m, name));
  }
}
