/**
 * Square f32 matmul throughput. At load the module measures each size with GPU timestamps (or
 * wall time around a sync) and prints a GFLOP/s table; the Deno.bench cases then time one
 * product plus a sync each. Sizes above BENCH_MAX_N (default 512 on a CPU/fallback adapter,
 * 4096 otherwise) are skipped: Mesa's CPU adapter manages about a GFLOP/s.
 *   deno bench -A bench/matmul_bench.ts
 */
import { gpu, initGpu } from "../src/gpu/mod.ts";
import { matmul } from "../src/tensor/mod.ts";
import { Tensor } from "../src/tensor/mod.ts";
import { randomArray } from "../src/testing/mod.ts";
import { timeGpu } from "./gpu_timer.ts";

const g = await initGpu();
const cpuAdapter = g.adapter.info?.isFallbackAdapter || /llvmpipe|swiftshader|lavapipe/i.test(
  g.adapterName,
);
const maxN = Number(Deno.env.get("BENCH_MAX_N") ?? (cpuAdapter ? 512 : 4096));
const sizes = [256, 512, 1024, 2048, 4096].filter((n) => n <= maxN);

const operands = new Map<number, [Tensor, Tensor]>();
for (const n of sizes) {
  operands.set(n, [
    Tensor.from(randomArray(n * n, n), [n, n]).keep(),
    Tensor.from(randomArray(n * n, n + 1), [n, n]).keep(),
  ]);
}

const rows: { n: number; ms: number; gflops: number; timer: string }[] = [];
for (const n of sizes) {
  const [a, b] = operands.get(n)!;
  const slow = cpuAdapter && n >= 512;
  const r = await timeGpu(() => matmul(a, b).dispose(), {
    reps: slow ? 2 : 5,
    perSpan: cpuAdapter ? 1 : Math.max(1, Math.round(2 ** 30 / n ** 3)),
  });
  rows.push({
    n,
    ms: r.medianMs,
    gflops: 2 * n ** 3 / (r.medianMs * 1e6),
    timer: r.gpuTimed ? "timestamp" : "wall",
  });
}
console.log(`matmul f32 on ${g.adapterName}`);
console.table(rows.map((r) => ({ ...r, ms: +r.ms.toFixed(3), gflops: +r.gflops.toFixed(1) })));

for (const n of sizes) {
  const [a, b] = operands.get(n)!;
  const gflops = rows.find((r) => r.n === n)!.gflops.toFixed(1);
  Deno.bench({
    name: `matmul f32 ${n}^3 (${gflops} GFLOP/s by ${rows[0]?.timer})`,
    group: "matmul",
    n: cpuAdapter && n >= 512 ? 2 : undefined,
    warmup: cpuAdapter ? 1 : undefined,
    async fn() {
      matmul(a, b).dispose();
      await gpu().sync();
    },
  });
}
