/**
 * A product's last wave run apart (`splitPlan`'s tail) against the plain K splits, on the GEMMs
 * of a training step: every linear layer of a Qwen2.5 shape at `rows` tokens and the LM head's
 * chunk products (4,096 rows by 4,096 vocabulary columns). f32, the default tile. Each product is
 * timed with tails off then on, alternated `rounds` times (GPU timestamps around `reps` products
 * recorded back to back, split sums included), and the two outputs compared.
 *   deno run -A bench/gemm_tails_device.ts [--shape=0.5b|1.5b] [--rows=6144] [--reps=10]
 *     [--rounds=2]
 * One JSON line per product (its plan, ms off / on, max |difference| over max |value|) and a last
 * line with the sums over the products whose plan has a tail.
 */
import { initGpu } from "../src/gpu/mod.ts";
import { gemm, pickTile, splitPolicy, Tensor, tileDims, tiledPlan } from "../src/tensor/mod.ts";
import { rng } from "../src/testing/mod.ts";
import { isQwen25Shape, linearProducts, QWEN25_SHAPES, type StepProduct } from "./grpo_setup.ts";
import { timeGpu, warmGpu } from "./gpu_timer.ts";

const args = new Map(Deno.args.map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const shapeName = args.get("shape") ?? "0.5b";
if (!isQwen25Shape(shapeName)) throw new Error(`--shape=${shapeName}: use 0.5b or 1.5b`);
const rows = Number(args.get("rows") ?? 6144);
const reps = Number(args.get("reps") ?? 10), rounds = Number(args.get("rounds") ?? 2);
const g = await initGpu();
if (g.multiprocessors === null) throw new Error(`${g.adapterName}: multiprocessor count unknown`);

const hidden = QWEN25_SHAPES[shapeName].hiddenSize;
const products: StepProduct[] = [
  ...linearProducts(shapeName, rows),
  ["lm_head.forward", 4096, 4096, hidden, false, true],
  ["lm_head.input_grad", 4096, hidden, 4096, false, false],
  ["lm_head.weight_grad", 4096, hidden, 4096, true, false],
];

function random(n: number, seed: number): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => r() * 2 - 1);
}

const sums = { off: 0, on: 0 };
for (const [name, m, n, k, transA, transB] of products) {
  const a = Tensor.from(random(m * k, 1), transA ? [k, m] : [m, k], "f32", "a").keep();
  const b = Tensor.from(random(n * k, 2), transB ? [n, k] : [k, n], "f32", "b").keep();
  const c = Tensor.empty([m, n], "f32", "c").keep();
  const d = { batch: 1, m, n, k, transA, transB, strideA: 0, strideB: 0 };
  splitPolicy.tails = true;
  const plan = tiledPlan(d, tileDims(pickTile(1, m, n))); // what gemm runs
  const run = () => gemm(a, b, c, d);
  const ms = { off: [] as number[], on: [] as number[] };
  const out: Record<string, Float32Array> = {};
  for (let r = 0; r < rounds; r++) {
    for (const tails of [false, true]) {
      splitPolicy.tails = tails;
      await warmGpu(run, 200);
      ms[tails ? "on" : "off"].push((await timeGpu(run, { reps: 3, perSpan: reps })).medianMs);
      out[String(tails)] ??= await c.toArray() as Float32Array;
    }
  }
  splitPolicy.tails = true;
  let diff = 0, top = 0;
  for (let i = 0; i < m * n; i++) {
    diff = Math.max(diff, Math.abs(out.true[i] - out.false[i]));
    top = Math.max(top, Math.abs(out.false[i]));
  }
  const best = (xs: number[]) => Math.min(...xs);
  if (plan.tail) {
    sums.off += best(ms.off);
    sums.on += best(ms.on);
  }
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  console.log(JSON.stringify({
    fig: "gemm_tails",
    name,
    m,
    n,
    k,
    plan,
    ms_off: ms.off.map(r3),
    ms_on: ms.on.map(r3),
    tflops_on: r3(2 * m * n * k / best(ms.on) / 1e9),
    rel_diff: diff / top,
  }));
  for (const t of [a, b, c]) t.dispose();
}
console.log(JSON.stringify({
  fig: "gemm_tails_sum",
  shape: shapeName,
  rows,
  adapter: g.adapterName,
  ms_off: Math.round(sums.off * 1000) / 1000,
  ms_on: Math.round(sums.on * 1000) / 1000,
}));
