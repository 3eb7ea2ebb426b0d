/**
 * Fused log-prob (+ entropy) kernel vs the unfused log-softmax + gather baseline. A small shape
 * always runs (the CPU adapter in CI); Qwen's vocabulary (V 151936, T 512) runs only on a real GPU.
 * Each iteration records REPS calls and waits once, so the ~11 ms readback/sync cost of Deno is
 * spread over them; Deno's summary prints the fused/unfused ratio per group.
 */
import { initGpu } from "../src/gpu/mod.ts";
import { scope, Tensor } from "../src/tensor/mod.ts";
import { logprobEntropy } from "../src/tensor/mod.ts";
import { unfusedLogProbs } from "../src/tensor/mod.ts";
import { rng } from "../src/testing/mod.ts";

const g = await initGpu();
const fallback = (g.adapter.info as { isFallbackAdapter?: boolean }).isFallbackAdapter === true ||
  /llvmpipe|swiftshader|lavapipe/i.test(g.adapterName);
const REPS = 4;

interface Shape {
  N: number;
  V: number;
}

function inputs({ N, V }: Shape): { logits: Tensor; targets: Tensor } {
  const r = rng(1);
  const xs = new Float32Array(N * V);
  for (let i = 0; i < xs.length; i++) xs[i] = 8 * r() - 4;
  const ts = Int32Array.from({ length: N }, () => Math.floor(r() * V));
  return {
    logits: Tensor.from(xs, [N, V], "f32", "bench.logits").keep(),
    targets: Tensor.from(ts, [N], "i32", "bench.targets").keep(),
  };
}

function register(name: string, shape: Shape): void {
  const { logits, targets } = inputs(shape);
  const group = `${name} N=${shape.N} V=${shape.V}`;
  const run = (fn: () => unknown) => async () => {
    for (let i = 0; i < REPS; i++) scope(fn);
    await g.sync();
  };
  for (const withEntropy of [false, true]) {
    const tag = withEntropy ? "logprob+entropy" : "logprob";
    Deno.bench({
      name: `fused ${tag}`,
      group: `${group} ${tag}`,
      baseline: true,
      fn: run(() => logprobEntropy(logits, targets, { withEntropy })),
    });
    Deno.bench({
      name: `unfused ${tag} (log-softmax [N, V] + gather)`,
      group: `${group} ${tag}`,
      fn: run(() => unfusedLogProbs(logits, targets, { withEntropy })),
    });
  }
}

register("small", { N: 16, V: 4099 });
if (!fallback) register("qwen vocab", { N: 512, V: 151936 });
