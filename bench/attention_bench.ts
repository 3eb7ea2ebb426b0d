/**
 * Attention forward + backward on whatever adapter Deno finds. The small shape runs everywhere
 * (CI: the CPU adapter); the Qwen2.5-0.5B-like training shape (B 4, T 512, Hq 14, Hkv 2, D 64)
 * and decode steps (B 64, T 1, 384 or 2048 cached keys) only on real GPUs. Each iteration records
 * REPS calls and syncs once, so Deno's ~11 ms sync cost is spread over them. Each decode shape runs
 * with the decode kernel and with the tiled forward (`decodeKernel: false`) in one group, so
 * `deno bench` prints their ratio.
 *
 *   deno bench -A bench/attention_bench.ts
 *   deno bench -A bench/attention_bench.ts --filter decode
 */
import { gpu, initGpu } from "../src/gpu/mod.ts";
import { backward, noGrad, scope, Tensor } from "../src/tensor/mod.ts";
import { attention } from "../src/tensor/mod.ts";
import { randomArray } from "../src/testing/mod.ts";

await initGpu();
const fallback = gpu().adapter.info?.isFallbackAdapter === true;

interface Shape {
  B: number;
  T: number;
  S: number;
  Hq: number;
  Hkv: number;
  D: number;
  pads?: number;
}

function inputs(s: Shape) {
  const q = Tensor.from(randomArray(s.B * s.T * s.Hq * s.D, 1), [s.B, s.T, s.Hq, s.D]).keep();
  const k = Tensor.from(randomArray(s.B * s.S * s.Hkv * s.D, 2), [s.B, s.S, s.Hkv, s.D]).keep();
  const v = Tensor.from(randomArray(s.B * s.S * s.Hkv * s.D, 3), [s.B, s.S, s.Hkv, s.D]).keep();
  const mask = new Int32Array(s.B * s.S).fill(1);
  for (let b = 0; b < s.B; b++) mask.fill(0, b * s.S, b * s.S + (s.pads ?? 0) * (b % 2));
  const keyMask = Tensor.from(mask, [s.B, s.S], "i32").keep();
  const dout = Tensor.from(randomArray(s.B * s.T * s.Hq * s.D, 4), q.shape).keep();
  return { q, k, v, keyMask, dout };
}

function benchTrain(name: string, s: Shape, reps: number, ignore: boolean): void {
  const x = ignore ? null : inputs(s);
  const step = () =>
    scope(() => {
      const { q, k, v, keyMask, dout } = x!;
      for (const t of [q, k, v]) t.requiresGrad = true;
      const out = attention(q, k, v, { keyMask });
      backward(out, dout);
      for (const t of [q, k, v]) {
        t.grad?.dispose();
        t.grad = null;
      }
    });
  if (x) {
    step(); // compile the pipelines
  }
  Deno.bench({
    name,
    ignore,
    group: "attention",
    async fn() {
      for (let i = 0; i < reps; i++) step();
      await gpu().sync();
    },
  });
}

function benchDecode(s: Shape, reps: number, ignore: boolean): void {
  const x = ignore ? null : inputs(s);
  for (const decodeKernel of [true, false]) {
    const step = () =>
      noGrad(() =>
        scope(() => attention(x!.q, x!.k, x!.v, { keyMask: x!.keyMask, decodeKernel }).dispose())
      );
    if (x) step();
    const kernel = decodeKernel ? "decode: attention_decode" : "decode: tiled attention_fwd";
    Deno.bench({
      name: `${kernel} B${s.B} S${s.S} Hq${s.Hq} Hkv${s.Hkv} D${s.D} (x${reps})`,
      ignore,
      group: `attention decode S${s.S}`,
      baseline: decodeKernel,
      async fn() {
        for (let i = 0; i < reps; i++) step();
        await gpu().sync();
      },
    });
  }
}

benchTrain(
  "fwd+bwd B2 T24 Hq4 Hkv2 D16 (x2)",
  { B: 2, T: 24, S: 24, Hq: 4, Hkv: 2, D: 16, pads: 5 },
  2,
  false,
);
benchTrain(
  "fwd+bwd B4 T512 Hq14 Hkv2 D64 (x10)",
  { B: 4, T: 512, S: 512, Hq: 14, Hkv: 2, D: 64, pads: 100 },
  10,
  fallback,
);
benchDecode({ B: 2, T: 1, S: 70, Hq: 14, Hkv: 2, D: 64, pads: 9 }, 2, false);
// The Qwen2.5-0.5B decode step of bench/profile_generate.ts (prompt 128 + new tokens).
benchDecode({ B: 64, T: 1, S: 384, Hq: 14, Hkv: 2, D: 64, pads: 100 }, 50, fallback);
benchDecode({ B: 64, T: 1, S: 2048, Hq: 14, Hkv: 2, D: 64, pads: 300 }, 50, fallback);
