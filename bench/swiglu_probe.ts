/**
 * The decode step's fused gate/up/SwiGLU product (`swigluLinear`, matmul_skinny_swiglu.wgsl) at
 * few rows, over register tiles and K splits (each timed after a second of the same work: an
 * H100 left mostly idle runs at 345 MHz), and with parts of its k loop dropped (`--variant`):
 * where its time goes. Weights cycle through eight layers (more than the L2 cache holds), as a
 * decode step reads them. Each line: microseconds per product (its split sum included), TFLOP/s.
 * Variants other than `base` give wrong results on purpose; `base` is checked against f64 sums.
 *
 *   deno run -A bench/swiglu_probe.ts [--m 64] [--n 4864] [--k 896] [--variant base|noload|
 *     nobar|noput|nowread|noxread|nolds] [--configs 8x16,...] [--splits auto,1,...] [--warm-ms 1000]
 */
import { initGpu, registerShaderSources, shaderSource } from "../src/gpu/mod.ts";
import { scope, swigluLinear, Tensor } from "../src/tensor/mod.ts";
import { arg, FUSED_TILES } from "./bench_model.ts";
import { timeGpu, warmGpu } from "./gpu_timer.ts";
import { randomData } from "./raw_kernel.ts";

const SHADER = "matmul_skinny_swiglu";
/** Per variant, the texts of the shader's k loop it replaces, each with its stand-in. */
type Edits = Array<[string, string]>;
/** A stage's vec4 of K, one text per read (the loop comes written out by `c`). */
const perC = (f: (c: number) => Edits): Edits => [0, 1, 2, 3].flatMap(f);
const xRead = (i: number, c: number) =>
  i === 0 ? `xs[cur][0][lid.y][${c} % K4]` : `xs[cur][${i}u % TM][lid.y][${c} % K4]`;
const wRead = (t: string, i: number, c: number) => `${t}s[cur][${i}][lid.x][${c} % K4]`;
const EDITS: Record<string, Edits> = {
  base: [],
  noload: [["if (more) { staged = fetch(m0, n0, k_lo + (t + 1u) * K4, k_hi, tid); }", ""]],
  noput: [["if (more) { put(1u - cur, tid, staged); }", ""]],
  nobar: [["    workgroupBarrier();\n  }\n  return", "  }\n  return"]],
  // The stage's shared reads of the weights (of three of x's four rows) replaced by x's first.
  nowread: perC((c) =>
    [0, 1, 2, 3].flatMap((i) => ["g", "u"].map((t): [string, string] => [wRead(t, i, c), "x0"]))
  ),
  noxread: perC((c) => [1, 2, 3].map((i): [string, string] => [xRead(i, c), "x0"])),
  // Every shared read of the loop replaced by registers this thread loaded for the stage (kept
  // distinct per row, so no two sums are the same chain): loads, stores and barriers stay.
  nolds: [
    ["let more = t + 1u < stages;", "let more = t + 1u < stages;\n    let held = staged;"],
    ...perC((c) =>
      [0, 1, 2, 3].flatMap((i): Edits => [
        [xRead(i, c), `(held.x${i % 2} + f32(${i}))`],
        [wRead("g", i, c), `(held.w0[0] + f32(${i}))`],
        [wRead("u", i, c), `(held.w0[1] + f32(${i}))`],
      ])
    ),
  ],
};
const variant = arg("variant", "base");
if (!(variant in EDITS)) throw new Error(`--variant ${variant}: one of ${Object.keys(EDITS)}`);
const g = await initGpu();
let code = shaderSource(SHADER);
for (const [from, to] of EDITS[variant]) {
  if (!code.includes(from)) throw new Error(`${SHADER} lacks ${JSON.stringify(from)}`);
  code = code.replaceAll(from, to);
}
registerShaderSources({ [SHADER]: code });

const m = Number(arg("m", "64")), n = Number(arg("n", "4864")), k = Number(arg("k", "896"));
const LAYERS = 8;
const x = Tensor.from(randomData(m * k, 1), [m, k]).keep();
const wData = randomData(n * k, 2);
const layers = Array.from({ length: LAYERS }, (_, i) => ({
  g: Tensor.from(wData, [n, k], "f16").keep(),
  u: Tensor.from(randomData(n * k, 3 + i), [n, k], "f16").keep(),
}));

/** Largest relative error of a few outputs against f64 sums (the half weights as stored). */
async function check(y: Tensor, wg: Tensor, wu: Tensor): Promise<number> {
  const out = await y.toArray() as Float32Array;
  const xs = await x.toArray() as Float32Array;
  const [gs, us] = [await wg.toArray(), await wu.toArray()] as Float32Array[];
  let worst = 0;
  for (let t = 0; t < 16; t++) {
    const i = (t * 7919) % m, j = (t * 104729) % n;
    let a = 0, b = 0;
    for (let p = 0; p < k; p++) {
      a += xs[i * k + p] * gs[j * k + p];
      b += xs[i * k + p] * us[j * k + p];
    }
    const want = a / (1 + Math.exp(-a)) * b;
    worst = Math.max(worst, Math.abs(out[i * n + j] - want) / (Math.abs(want) + 1e-3));
  }
  return worst;
}

const flop = 2 * 2 * m * n * k;
// The first config again at the end: a drift of the GPU's clock shows as two figures for it.
const only = arg("configs", "");
const picked = only
  ? only.split(",").map((c) => {
    if (!(c in FUSED_TILES)) throw new Error(`--configs ${c}: one of ${Object.keys(FUSED_TILES)}`);
    return [c, FUSED_TILES[c]] as const;
  })
  : Object.entries(FUSED_TILES);
const runs = [...picked, ["8x16 (again)", FUSED_TILES["8x16"]] as const];
for (const [name, config] of runs) {
  for (const splits of arg("splits", "auto,1,2,3,4,6").split(",")) {
    const split = splits === "auto" ? undefined : Number(splits);
    let layer = 0, y: Tensor | null = null;
    const run = () => {
      const l = layers[layer++ % LAYERS];
      y?.dispose();
      y = scope(() => swigluLinear(x, l.g, l.u, { config, splits: split }).keep());
    };
    try {
      await warmGpu(run, Number(arg("warm-ms", "1000")));
      const { medianMs } = await timeGpu(run, { reps: 3, perSpan: 32 * LAYERS });
      const err = variant === "base"
        ? await check(y!, layers[(layer - 1) % LAYERS].g, layers[(layer - 1) % LAYERS].u)
        : null;
      console.log(JSON.stringify({
        variant,
        config: name,
        splits,
        us: +(medianMs * 1000).toFixed(1),
        tflops: +(flop / medianMs / 1e9).toFixed(2),
        err,
      }));
    } catch (e) {
      console.log(JSON.stringify({ variant, config: name, splits, error: (e as Error).message }));
    }
    (y as Tensor | null)?.dispose();
  }
}
console.log(JSON.stringify({ device: g.adapterName }));
