/**
 * Where decode time goes: GPU milliseconds per kernel (timestamp queries) against wall time for a
 * short generation on the Qwen2.5-0.5B shape.
 * `deno run -A bench/profile_generate.ts [--new 16] [--dtype f32|f16] [--kv f32|f16] [--rows 20]
 *   [--by-grid 1] [decode tuning flags of bench_model.ts]`.
 * Kernel lines give the totals over prefill and decode, and `per_step_ms`: the same kernel's time
 * per decode step (a prefill-only run subtracted, divided by the decode steps profiled, which the
 * embedding gathers count: the profiler may stop recording before a long generation ends).
 * --by-grid 1 keys the lines by pipeline and workgroup grid (`kernelTotals`, as grpo_step_device's
 * --by-grid), which tells one kernel's products apart (the LM head from the MLP's).
 */
import { gpu, initGpu, type KernelSpan, kernelTotals } from "../src/gpu/mod.ts";
import { makeModelConfig } from "../src/io/mod.ts";
import { CausalLM } from "../src/nn/mod.ts";
import { weightShapes } from "../src/nn/mod.ts";
import { generate } from "../src/rollout/mod.ts";
import { applyDecodeFlags } from "./bench_model.ts";

const arg = (name: string, d: number) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : d;
};
const B = arg("batch", 64), P = arg("prompt", 128), R = arg("new", 16);
applyDecodeFlags();
const word = (name: string, d: "f32" | "f16"): "f32" | "f16" => {
  const i = Deno.args.indexOf(`--${name}`);
  const v = i >= 0 ? Deno.args[i + 1] : d;
  if (v !== "f32" && v !== "f16") throw new Error(`--${name} ${v}: use f32 or f16`);
  return v;
};
const dtype = word("dtype", "f32"), kvDtype = word("kv", "f32");
const g = await initGpu();
const config = makeModelConfig({
  modelType: "qwen2",
  hiddenSize: arg("hidden", 896),
  intermediateSize: arg("intermediate", 4864),
  numHiddenLayers: arg("layers", 24),
  numAttentionHeads: 14,
  numKeyValueHeads: 2,
  vocabSize: arg("vocab", 151936),
  eosTokenId: 0,
  tieWordEmbeddings: true,
  ropeTheta: 1e6,
});
const arrays = new Map<string, Float32Array>();
for (const [name, shape] of weightShapes(config)) {
  const a = new Float32Array(shape.reduce((x, y) => x * y, 1));
  if (name.endsWith("norm.weight")) a.fill(1);
  else for (let i = 0; i < a.length; i++) a[i] = ((i * 2654435761) % 1000) / 25000 - 0.02;
  arrays.set(name, a);
}
const model = CausalLM.fromTensors(config, arrays, { dtype });
const ids = Int32Array.from(
  { length: B * P },
  (_, i) => (i * 7919) % Math.min(150000, config.vocabSize),
);
const opts = {
  inputIds: ids,
  attentionMask: new Int32Array(B * P).fill(1),
  batch: B,
  promptLength: P,
  responseLength: R,
  eosTokenIds: [] as number[],
  padTokenId: 0,
  seed: 1,
  topK: 50,
  topP: 0.9,
  kvDtype,
};
await generate(model, opts); // warm-up: pipelines compiled
let t0 = performance.now();
await generate(model, opts);
const wall = performance.now() - t0;
t0 = performance.now();
const byGrid = arg("by-grid", 0) === 1;
/**
 * GPU ms per kernel (shader:entry; under --by-grid per pipeline and workgroup grid,
 * `kernelTotals`) of one profiled generation.
 */
async function profiled(responseLength: number) {
  const spans: KernelSpan[] = [];
  const rows = await g.profile(async () => {
    await generate(model, { ...opts, responseLength });
  }, { spans });
  return byGrid ? kernelTotals(spans, { byGrid }) : rows;
}
const rows = await profiled(R);
const prefill = new Map((await profiled(1)).map((r) => [r.kernel, r.ms]));
const total = rows.reduce((a, r) => a + r.ms, 0);
const prefillTotal = [...prefill.values()].reduce((a, b) => a + b, 0);
const gathers = rows.filter((r) => r.kernel.startsWith("embedding:gather"));
const steps = Math.max(0, gathers.reduce((a, r) => a + r.count, 0) - 1);
const perStep = (ms: number, kernel: string) =>
  steps > 0 ? Math.round((ms - (prefill.get(kernel) ?? 0)) / steps * 1000) / 1000 : 0;
console.log(
  JSON.stringify({
    dtype,
    kv_dtype: kvDtype,
    wall_ms: Math.round(wall),
    gpu_ms_profiled: Math.round(total),
    new_tokens: R,
    decode_steps_profiled: steps,
    gpu_ms_per_decode_step: steps > 0
      ? Math.round((total - prefillTotal) / steps * 1000) / 1000
      : 0,
  }),
);
for (const r of rows.slice(0, arg("rows", 20))) {
  console.log(JSON.stringify({
    kernel: r.kernel,
    ms: Math.round(r.ms * 10) / 10,
    count: r.count,
    per_step_ms: perStep(r.ms, r.kernel),
  }));
}
console.log(JSON.stringify({ submits: gpu().recorder.submits }));
