/**
 * Decode throughput of the generation engine on a real GPU, one JSON line per measurement.
 * Random weights in the Qwen2.5-0.5B shape (or --config qwen2.5-1.5b | tiny), EOS off so every
 * run decodes the full length. Decode tokens/s = B * (R - 1) / (time(R) - time(1)): prefill and
 * the first sample cancel out.
 *
 *   deno run -A bench/generate_device.ts --batch 64 --prompt 128 --new 256 --dtype f32,f16
 *
 * --layers N / --vocab N shrink the Qwen2.5 shape (a CPU adapter cannot bind the full embedding).
 * --n N draws N samples from each of batch / N prompts (as GRPO does); --shared-prefill 0 prefills
 * every sample's copy of its prompt instead of each prompt once.
 * --kv f32 | f16 | f32,f16: the KV cache's element type (halves: half the cache bytes per step).
 * --eos ID: EOS on (that token id) with its checks of the finished flags, one read per 16 steps;
 *   random weights rarely sample it, so the run still decodes about the full length.
 * The decode kernels' tuning flags (skinny routing and splits, fused MLP / q,k,v, attention
 * splits) are `applyDecodeFlags`' (bench_model.ts).
 * `responses_fnv`: a hash of the last run's tokens (equal hashes: the same tokens).
 * `dispatches_per_step`: compute dispatches recorded per decode step (prefill and the first sample
 * subtracted as for the time); any adapter, though a CPU adapter takes other kernels (no skinny
 * matmul, no split K), so the count on a GPU differs.
 */
import { gpu, initGpu } from "../src/gpu/mod.ts";
import {
  applyDecodeFlags,
  arg,
  benchConfig,
  decodeFlagsUsed,
  randomArrays,
} from "./bench_model.ts";
import { CausalLM, type KvDtype } from "../src/nn/mod.ts";
import { generate } from "../src/rollout/mod.ts";
import { SampleBuffers, sampleStep } from "../src/rollout/mod.ts";
import { noGrad } from "../src/tensor/mod.ts";
import { scope } from "../src/tensor/mod.ts";
import { Tensor } from "../src/tensor/mod.ts";

/** FNV-1a of the sampled ids: runs that drew the same tokens print the same value. */
function fnv1a(ids: Int32Array): string {
  let h = 0x811c9dc5;
  for (const v of ids) h = Math.imul(h ^ v, 0x01000193) >>> 0;
  return h.toString(16);
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

await initGpu();
const g = gpu();
applyDecodeFlags();
const config = benchConfig(arg("config", "qwen2.5-0.5b"));
const B = Number(arg("batch", "64")),
  P = Number(arg("prompt", "128")),
  R = Number(arg("new", "256"));
const sample = arg("sample", "topp") !== "greedy";
const n = Number(arg("n", "1"));
const sharedPrefill = arg("shared-prefill", "1") === "1";
if (!Number.isInteger(B / n)) throw new Error(`--batch ${B} is not a multiple of --n ${n}`);
const prompts = B / n;
const ids = new Int32Array(prompts * P);
for (let i = 0; i < ids.length; i++) ids[i] = (i * 7919 + 13) % config.vocabSize;
const mask = new Int32Array(prompts * P).fill(1);
for (let b = 0; b < prompts; b += 2) mask.fill(0, b * P, b * P + (b % 16)); // some left padding
const arrays = randomArrays(config);
const eos = Number(arg("eos", "-1")); // see --eos above
const eosIds = eos >= 0 ? [eos] : [];
const kvDtypes = arg("kv", "f32").split(",") as KvDtype[];
for (const kv of kvDtypes) {
  if (kv !== "f32" && kv !== "f16") throw new Error(`--kv ${kv}: use f32, f16 or f32,f16`);
}
for (const dtype of arg("dtype", "f32,f16").split(",") as ("f32" | "f16")[]) {
  if (dtype === "f16" && !g.hasF16) {
    console.log(JSON.stringify({ dtype, skipped: "no shader-f16 on this adapter" }));
    continue;
  }
  const model = CausalLM.fromTensors(config, arrays, { dtype });
  for (const kvDtype of kvDtypes) {
    const run = (responseLength: number) =>
      generate(model, {
        inputIds: ids,
        attentionMask: mask,
        batch: prompts,
        n,
        sharedPrefill,
        promptLength: P,
        responseLength,
        doSample: sample,
        temperature: 1,
        topK: sample ? 50 : 0,
        topP: sample ? 0.9 : 1,
        eosTokenIds: eosIds,
        padTokenId: 0,
        seed: 1,
        submitEachStep: arg("submit-each-step", "1") === "1",
        kvDtype,
      });
    await run(4); // compile every pipeline
    const d0 = g.recorder.dispatches;
    const first = Math.min(await timed(() => run(1)), await timed(() => run(1)));
    const dispatchesFirst = (g.recorder.dispatches - d0) / 2;
    const submitsBefore = g.recorder.submits, d1 = g.recorder.dispatches;
    let responses: Int32Array = new Int32Array();
    const full = await timed(async () => void ({ responses } = await run(R)));
    const dispatchesPerStep = (g.recorder.dispatches - d1 - dispatchesFirst) / (R - 1);
    const decode = B * (R - 1) / (full - first);
    console.log(JSON.stringify({
      bench: "generate",
      adapter: g.adapterName,
      submit_each_step: arg("submit-each-step", "1") === "1",
      dtype,
      kv_dtype: kvDtype,
      layers: config.numHiddenLayers,
      hidden: config.hiddenSize,
      vocab: config.vocabSize,
      batch: B,
      samples_per_prompt: n,
      shared_prefill: sharedPrefill,
      prompt: P,
      new_tokens: R,
      sampling: sample ? "top_k 50, top_p 0.9" : "greedy",
      ...decodeFlagsUsed(),
      prefill_plus_first_s: +first.toFixed(4),
      total_s: +full.toFixed(3),
      ms_per_step: +((full - first) / (R - 1) * 1000).toFixed(2),
      decode_tokens_per_s: Math.round(decode),
      end_to_end_tokens_per_s: Math.round(B * R / full),
      submits: g.recorder.submits - submitsBefore,
      dispatches_per_step: +dispatchesPerStep.toFixed(1),
      peak_gib: +(g.pool.peakBytes / 2 ** 30).toFixed(2),
      responses_fnv: fnv1a(responses),
    }));
  }
  if (arg("profile", "0") === "1") await profile(model, dtype);
  model.dispose();
}

/** Splits a decode step into the model's forward and the sampler (one sync per 32 steps). */
async function profile(model: CausalLM, dtype: string): Promise<void> {
  const steps = 32, V = config.vocabSize;
  const logits = Tensor.from(
    Float32Array.from({ length: B * V }, (_, i) => Math.sin(i * 0.37) * 8),
    [B, V],
  ).keep();
  const bufs = SampleBuffers.create(B, steps, new Int32Array(B));
  const cfgs = {
    greedy: { doSample: false, topK: 0, topP: 1 },
    temperature: { doSample: true, topK: 0, topP: 1 },
    top_k_50: { doSample: true, topK: 50, topP: 1 },
    top_p_0_9: { doSample: true, topK: 0, topP: 0.9 },
    top_k_top_p: { doSample: true, topK: 50, topP: 0.9 },
  };
  const out: Record<string, number> = {};
  for (const [name, c] of Object.entries(cfgs)) {
    const cfg = { ...c, temperature: 1, seed: 1, eosTokenIds: [], padTokenId: 0 };
    sampleStep(logits, bufs, 0, cfg);
    await g.sync();
    const t = await timed(async () => {
      for (let s = 0; s < steps; s++) sampleStep(logits, bufs, s, cfg);
      await g.sync();
    });
    out[`sampler_${name}_ms`] = +(t / steps * 1000).toFixed(3);
  }
  const cache = model.createCache(B, P + steps + 1, mask);
  cache.advance(P); // contents do not matter for timing
  const ids1 = Tensor.from(new Int32Array(B).fill(5), [B, 1], "i32").keep();
  const pos1 = Tensor.from(new Int32Array(B).fill(P), [B, 1], "i32").keep();
  scope(() => model.decodeStep(cache, ids1, pos1));
  await g.sync();
  const t = await timed(async () => {
    for (let s = 0; s < steps - 1; s++) {
      scope(() => noGrad(() => model.decodeStep(cache, ids1, pos1)));
    }
    await g.sync();
  });
  out.decode_forward_ms = +(t / (steps - 1) * 1000).toFixed(3);
  console.log(JSON.stringify({ bench: "generate_profile", dtype, batch: B, ...out }));
  for (const x of [logits, ids1, pos1]) x.dispose();
  bufs.dispose();
  cache.dispose();
}
