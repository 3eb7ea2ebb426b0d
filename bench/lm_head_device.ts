/**
 * The LM head + log-prob + entropy, forward and backward, at Qwen's vocabulary: the whole-logits
 * path (linear -> logprobEntropy, [N, V] logits and their gradient) against the chunked op
 * (lmHeadLogprob) at several chunk budgets. Prints JSON lines with milliseconds per call (wall
 * time, from two batch sizes between syncs so the ~11 ms sync cancels) and the buffer pool's peak
 * bytes in use during one call.
 *
 *   deno run -A bench/lm_head_device.ts [--rows=3072] [--hidden=896] [--vocab=151936] [--quick]
 *
 * --quick: a small shape for a CPU adapter (rows 64, hidden 32, vocab 4099).
 */
import { initGpu } from "../src/gpu/mod.ts";
import {
  backward,
  linear,
  lmHeadLogprob,
  logprobEntropy,
  scope,
  Tensor,
  uniformArray,
  zeroGrad,
} from "../src/tensor/mod.ts";

const g = await initGpu();
const quick = Deno.args.includes("--quick");
const arg = (name: string, d: number) =>
  Number(Deno.args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? d);
const N = arg("rows", quick ? 64 : 3072), C = arg("hidden", quick ? 32 : 896);
const V = arg("vocab", quick ? 4099 : 151936);
const emit = (o: Record<string, unknown>) => console.log(JSON.stringify(o));
emit({ adapter: g.adapterName, rows: N, hidden: C, vocab: V });

const hidden = Tensor.from(uniformArray(N * C, 1, -1, 1), [N, C]).keep();
const weight = Tensor.from(uniformArray(V * C, 2, -0.05, 0.05), [V, C]).keep();
const targets = Tensor.from(
  Int32Array.from({ length: N }, (_, i) => (i * 7919) % V),
  [N],
  "i32",
).keep();
const gLp = Tensor.from(uniformArray(N, 3, -1, 1), [N]).keep();
const gEnt = Tensor.from(uniformArray(N, 4, -1, 1), [N]).keep();
hidden.requiresGrad = weight.requiresGrad = true;

type Path = () => { logProbs: Tensor; entropy: Tensor | null };
const paths: [string, Path][] = [
  [
    "whole logits (linear + logprobEntropy)",
    () => logprobEntropy(linear(hidden, weight), targets, { withEntropy: true }),
  ],
  ...[16, 64, 256].map((mb): [string, Path] => [
    `chunked, ${mb} MiB chunks`,
    () => lmHeadLogprob(hidden, weight, targets, { withEntropy: true, chunkBytes: mb * 2 ** 20 }),
  ]),
];

function call(path: Path): void {
  scope(() => {
    const out = path();
    backward([out.logProbs, out.entropy!], [gLp, gEnt]);
  });
  zeroGrad([hidden, weight]);
}

for (const [name, path] of paths) {
  try {
    await g.sync();
    g.pool.resetPeak();
    const base = g.pool.inUseBytes;
    call(path);
    await g.sync();
    const peak = g.pool.peakBytes - base;
    const batch = async (k: number) => {
      const t0 = performance.now();
      for (let i = 0; i < k; i++) call(path);
      await g.sync();
      return performance.now() - t0;
    };
    const a = await batch(2), b = await batch(6);
    emit({ path: name, ms: +((b - a) / 4).toFixed(2), peak_mib: +(peak / 2 ** 20).toFixed(1) });
  } catch (e) {
    emit({ path: name, error: (e as Error).message });
  }
}
