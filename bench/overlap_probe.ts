/**
 * Whether two independent GEMMs recorded back to back run side by side on the GPU: a backward's
 * d input and d weight products read the same gradient and write different buffers, so no barrier
 * need separate them, and the second could fill the first's last, partial wave.
 *
 *   deno run -A bench/overlap_probe.ts [--reps 20] [--splits auto|1]
 *
 * Per pair of the 0.5B update's shapes: GPU ms of A alone, B alone (each repeated: the repeat
 * writes the same output, so a barrier parts them) and of A then B repeated (a barrier only before
 * the next A). `overlap_ms` = A + B - (A then B): what running side by side saved per pair.
 */
import { initGpu } from "../src/gpu/mod.ts";
import { type Gemm, gemm, Tensor } from "../src/tensor/mod.ts";
import { rng } from "../src/testing/mod.ts";
import { timeGpu, warmGpu } from "./gpu_timer.ts";

const arg = (name: string, d: string) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : d;
};
const reps = Number(arg("reps", "20"));
const forced = arg("splits", "auto") === "auto" ? undefined : Number(arg("splits", "1"));
await initGpu();

interface Side {
  name: string;
  m: number;
  n: number;
  k: number;
  transA: boolean;
}
// [name, A, B]: the d input and d weight products of one backward step (f32 operands).
const PAIRS: [string, Side, Side][] = [
  ["lm_head_chunk", { name: "dh", m: 4096, n: 896, k: 4096, transA: false }, {
    name: "dw",
    m: 4096,
    n: 896,
    k: 4096,
    transA: true,
  }],
  ["mlp_up", { name: "dx", m: 6144, n: 896, k: 4864, transA: false }, {
    name: "dw",
    m: 4864,
    n: 896,
    k: 6144,
    transA: true,
  }],
  ["mlp_down", { name: "dx", m: 6144, n: 4864, k: 896, transA: false }, {
    name: "dw",
    m: 896,
    n: 4864,
    k: 6144,
    transA: true,
  }],
  ["q_proj", { name: "dx", m: 6144, n: 896, k: 896, transA: false }, {
    name: "dw",
    m: 896,
    n: 896,
    k: 6144,
    transA: true,
  }],
];

function random(n: number, seed: number): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => r() * 2 - 1);
}

/** Operands and output of one side; A is [m, k] or stored [k, m], B is [k, n]. */
function make(s: Side, seed: number) {
  const a = Tensor.from(random(s.m * s.k, seed), s.transA ? [s.k, s.m] : [s.m, s.k]).keep();
  const b = Tensor.from(random(s.k * s.n, seed + 1), [s.k, s.n]).keep();
  const out = Tensor.empty([s.m, s.n]).keep();
  const d: Gemm = { ...s, batch: 1, transB: false, strideA: 0, strideB: 0 };
  return { run: () => gemm(a, b, out, d, { splits: forced }), tensors: [a, b, out] };
}

for (const [pair, sa, sb] of PAIRS) {
  const A = make(sa, 1), B = make(sb, 3);
  const both = () => {
    A.run();
    B.run();
  };
  await warmGpu(both);
  const ms = async (fn: () => void) => (await timeGpu(fn, { reps: 5, perSpan: reps })).medianMs;
  const a = await ms(A.run), b = await ms(B.run), ab = await ms(both);
  const flop = (s: Side) => 2 * s.m * s.n * s.k;
  console.log(JSON.stringify({
    pair,
    splits: forced ?? "auto",
    a_ms: +a.toFixed(3),
    b_ms: +b.toFixed(3),
    a_then_b_ms: +ab.toFixed(3),
    overlap_ms: +(a + b - ab).toFixed(3),
    tflops: {
      a: +(flop(sa) / a / 1e9).toFixed(1),
      b: +(flop(sb) / b / 1e9).toFixed(1),
      pair: +((flop(sa) + flop(sb)) / ab / 1e9).toFixed(1),
    },
  }));
  for (const t of [...A.tensors, ...B.tensors]) t.dispose();
}
