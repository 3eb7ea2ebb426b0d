/**
 * How many 128x128 blocks the GPU runs at once: one product of 8 block columns (x W^T, K fixed,
 * unsplit) timed at 64, 72, ... 640 blocks; its time steps up where a new wave of blocks begins.
 * This is how the wave model (`waveSplits`) learnt that an H100 holds two blocks per
 * multiprocessor. Prints `blocks:ms` pairs.
 *   deno run -A bench/gemm_waves_device.ts [K=3072] [most block rows=80]
 */
import { initGpu } from "../src/gpu/mod.ts";
import { matmulTiled, splitPolicy, Tensor } from "../src/tensor/mod.ts";
import { profiledMs } from "./gpu_timer.ts";
splitPolicy.minStages = Infinity;
await initGpu();
const K = Number(Deno.args[0] ?? 3072);
const N = 128 * 8; // 8 block columns
const out: Record<string, number>[] = [];
for (let rows = 8; rows <= (Deno.args[1] ? Number(Deno.args[1]) : 80); rows += 1) {
  const M = 128 * rows;
  const a = Tensor.from(new Float32Array(M * K).fill(0.5), [M, K], "f32", "a");
  const b = Tensor.from(new Float32Array(N * K).fill(0.25), [N, K], "f32", "b");
  const run = () => matmulTiled(a, b, { transB: true, tile: "large" }).dispose();
  const best = await profiledMs(run);
  out.push({ blocks: rows * 8, ms: best });
  a.dispose();
  b.dispose();
}
console.log(out.map((o) => `${o.blocks}:${o.ms}`).join(" "));
