/**
 * K splits of the GEMMs of a training step: every linear layer of a Qwen2.5 shape at `rows`,
 * forward (x W^T), input gradient (g W) and weight gradient (g^T x), f32, 128x128 blocks, timed
 * whole, in 2..S splits, under the rule that ignores the GPU's multiprocessor count and under the
 * wave model (`waveSplits`, the default where the count is known). One JSON line per product and
 * a last line with the sums. This is how the wave model's partial cost was fitted.
 *   deno run -A bench/gemm_splits_device.ts [--shape=0.5b|1.5b] [--rows=3072] [--max-splits=8]
 *     [--costs=2e-6,1e-6]
 * --costs: partial-element costs (`splitPolicy.elementCost`) whose picks are looked up among the
 * forced splits' times (`costs` in each line, `by_cost` in the sums): which cost picks best.
 */
import { initGpu } from "../src/gpu/mod.ts";
import { gemm, splitPolicy, Tensor, tileDims, tiledSplits, TILES } from "../src/tensor/mod.ts";
import { isQwen25Shape, linearProducts } from "./grpo_setup.ts";
import { profiledMs } from "./gpu_timer.ts";

const args = new Map(Deno.args.map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const shapeName = args.get("shape") ?? "0.5b";
if (!isQwen25Shape(shapeName)) throw new Error(`--shape=${shapeName}: use 0.5b or 1.5b`);
const rows = Number(args.get("rows") ?? 3072);
const maxSplits = Number(args.get("max-splits") ?? 8);
const costs = (args.get("costs") ?? "").split(",").filter(Boolean).map(Number);
const defaultCost = splitPolicy.elementCost;
const g = await initGpu();
if (g.multiprocessors === null) {
  console.error(`${g.adapterName}: multiprocessor count unknown, the wave model is off here`);
}

const products = linearProducts(shapeName, rows);

const sums = { rule: 0, waves: 0, best: 0 };
const byCost: Record<string, number> = {};
for (const [name, m, n, k, transA, transB] of products) {
  const a = Tensor.from(new Float32Array(m * k).fill(0.5), transA ? [k, m] : [m, k], "f32", "a");
  const b = Tensor.from(new Float32Array(n * k).fill(0.25), transB ? [n, k] : [k, n], "f32", "b");
  const c = Tensor.empty([m, n], "f32", "c");
  const d = { batch: 1, m, n, k, transA, transB, strideA: 0, strideB: 0 };
  const forced: Record<string, number> = {};
  for (let sp = 1; sp <= maxSplits; sp++) {
    forced[sp] = await profiledMs(() => gemm(a, b, c, d, { tile: "large", splits: sp }));
  }
  const policy = async (waves: boolean) => {
    splitPolicy.waves = waves;
    return {
      ms: await profiledMs(() => gemm(a, b, c, d)),
      splits: tiledSplits(d, tileDims(TILES.large)),
    };
  };
  const rule = await policy(false), waves = await policy(true);
  const best = Math.min(...Object.values(forced));
  // Each cost's pick, timed among the forced splits (past them: timed as the policy runs it).
  const picks: Record<string, { splits: number; ms: number }> = {};
  for (const cost of costs) {
    splitPolicy.elementCost = cost;
    const sp = tiledSplits(d, tileDims(TILES.large));
    const ms = forced[sp] ?? await profiledMs(() => gemm(a, b, c, d));
    picks[cost] = { splits: sp, ms };
    byCost[cost] = (byCost[cost] ?? 0) + ms;
  }
  splitPolicy.elementCost = defaultCost;
  sums.rule += rule.ms;
  sums.waves += waves.ms;
  sums.best += best;
  console.log(JSON.stringify({ fig: "gemm_splits", name, m, n, k, rule, waves, forced, picks }));
  for (const t of [a, b, c]) t.dispose();
}
console.log(JSON.stringify({
  fig: "gemm_splits_sum",
  shape: shapeName,
  rows,
  adapter: g.adapterName,
  ...sums,
  by_cost: byCost,
  speedup: Math.round((sums.rule / sums.waves) * 1000) / 1000,
}));
