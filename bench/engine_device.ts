/**
 * Continuous batching (src/rollout/engine.ts) against lock-step batches (`generate`) on one GPU,
 * one JSON line per mode: N requests of one prompt length with ragged maxTokens (uniform in
 * [--min-new, --max-new], seeded), EOS off so each request runs to its own maxTokens. `generate`
 * takes the requests --max-seqs at a time and decodes every batch to its longest maxTokens (the
 * tokens past a row's maxTokens are wasted); the engine keeps --max-seqs sequences in flight and
 * admits a waiting request as soon as one finishes. tokens_per_s counts the requested tokens only
 * (the sum of maxTokens) over wall time, prefills included; peak_gib is the buffer pool's peak
 * of bytes in use during the run (weights included).
 *
 *   deno run -A bench/engine_device.ts --requests 256 --max-seqs 64 --prompt 128 \
 *     --min-new 32 --max-new 256 --dtype f16 --kv f16
 *
 * --samples K: the requests are N / K prompts with K samples each (identical prompt ids, a seed
 * each, as rollout.n): the engine prefills each prompt once for its samples (engine_prefix.ts),
 * engine-noshare prefills every request, generate takes --max-seqs / K prompts a batch with n = K
 * (its own shared prefill).
 *
 *   deno run -A bench/engine_device.ts --requests 256 --max-seqs 64 --prompt 512 --samples 8 \
 *     --min-new 32 --max-new 256 --dtype f16 --kv f16 --mode engine,engine-noshare,generate
 *
 * --turns T --turn-tokens M: each request is a conversation of T turns, each turn a request of
 * its own whose prompt is the last one's prompt + its tokens + M new ids (the agent loop's
 * shape); tokens_per_s counts every turn's tokens. engine (prefix caching on: a turn prefills
 * only what the last one's cached blocks do not hold) against engine-nocache (every turn
 * prefills its whole context); generate does not take turns.
 *
 *   deno run -A bench/engine_device.ts --requests 64 --max-seqs 64 --prompt 512 --turns 4 \
 *     --turn-tokens 64 --min-new 32 --max-new 128 --dtype f16 --kv f16 --mode engine,engine-nocache
 *
 * --config tiny (with --layers N) runs anywhere, a CPU adapter included. --num-blocks N sets the
 * engine's pool (default: --max-seqs sequences of prompt + max-new positions, no preemption);
 * fewer blocks cap its KV memory, and it preempts when they run out. --block N: positions per
 * block (default 16). --mode: a comma list of engine, engine-noshare, engine-nocache, generate;
 * both (the default) is engine,generate, or engine,engine-nocache with --turns. --sample greedy |
 * topp. --in-flight N: most engine steps left unread, read half at a time while the other half is
 * recorded (default ENGINE_STEPS_IN_FLIGHT, 16; the trainer's rollout takes
 * ENGINE_BATCH_STEPS_IN_FLIGHT, 64); `steps_while_reading` counts steps recorded during a read.
 * --profile N: GPU time per kernel of N requests through each mode.
 * The decode attention flags (--attn-min-chunk, --attn-max-chunk, --attn-target) as in
 * generate_device.ts (bench_model.ts).
 */
import { gpu, initGpu } from "../src/gpu/mod.ts";
import { CausalLM, type KvDtype } from "../src/nn/mod.ts";
import { Engine, ENGINE_STEPS_IN_FLIGHT, generate } from "../src/rollout/mod.ts";
import { applyDecodeFlags, arg, benchConfig, randomArrays } from "./bench_model.ts";
import { lcg } from "./grpo_setup.ts";

await initGpu();
applyDecodeFlags(); // --attn-*
const g = gpu();
const config = benchConfig(arg("config", "qwen2.5-0.5b"));
const N = Number(arg("requests", "256")), B = Number(arg("max-seqs", "64"));
const stepsInFlight = Number(arg("in-flight", `${ENGINE_STEPS_IN_FLIGHT}`));
const P = Number(arg("prompt", "128"));
const minNew = Number(arg("min-new", "32")), maxNew = Number(arg("max-new", "256"));
const blockSize = Number(arg("block", "16"));
const turns = Number(arg("turns", "1")), turnTokens = Number(arg("turn-tokens", "32"));
// A conversation's last turn: its prompt, every earlier turn's tokens and new ids, its own.
const longest = P + turns * maxNew + (turns - 1) * turnTokens;
const numBlocks = Number(arg("num-blocks", `${B * Math.ceil(longest / blockSize)}`));
const dtype = arg("dtype", "f32") as "f32" | "f16";
const kvDtype = arg("kv", "f32") as KvDtype;
const K = Number(arg("samples", "1"));
const modeArg = arg("mode", "both");
const both = turns > 1 ? "engine,engine-nocache" : "engine,generate";
const modes = (modeArg === "both" ? both : modeArg).split(",");
const sample = arg("sample", "topp") !== "greedy";
const sampling = {
  temperature: 1,
  topK: sample ? 50 : 0,
  topP: sample ? 0.9 : 1,
  doSample: sample,
};
if (
  !(minNew >= 1 && maxNew >= minNew) ||
  ![N, B, P, blockSize, K, turns, turnTokens].every((x) => x >= 1)
) {
  throw new Error(
    "engine_device: need requests, max-seqs, prompt, block, samples, turns, turn-tokens >= 1, " +
      "1 <= min-new <= max-new",
  );
}
if (N % K !== 0 || B % K !== 0) {
  throw new Error(`engine_device: --samples ${K} must divide --requests ${N} and --max-seqs ${B}`);
}
for (const m of modes) {
  if (!["engine", "engine-noshare", "engine-nocache", "generate"].includes(m)) {
    throw new Error(
      `--mode ${m}: use engine, engine-noshare, engine-nocache, generate (comma-separated) or both`,
    );
  }
  if (m === "generate" && turns > 1) throw new Error("--mode generate does not take --turns");
}
if (dtype === "f16" && !g.hasF16) throw new Error("--dtype f16: no shader-f16 on this adapter");

const rand = lcg(7);
// Request r asks for sample r % K of prompt floor(r / K).
const prompts = Array.from({ length: N }, (_, r) => {
  const p = Math.floor(r / K);
  return Int32Array.from({ length: P }, (_, i) => (p * 7919 + i * 104729 + 13) % config.vocabSize);
});
const maxTokens = Array.from(
  { length: N },
  () => minNew + Math.floor(rand() * (maxNew - minNew + 1)),
);
const wanted = turns * maxTokens.reduce((a, b) => a + b, 0);
// The new ids turn t (t >= 1) of request r appends after the last turn's tokens.
const turnIds = (r: number, t: number) =>
  Array.from({ length: turnTokens }, (_, i) => (r * 31 + t * 7 + i * 613 + 5) % config.vocabSize);
const model = CausalLM.fromTensors(config, randomArrays(config), { dtype });

async function runEngine(n: number, share: boolean, caching = true) {
  const engine = new Engine(model, {
    sharePrefixes: share,
    prefixCaching: caching,
    maxSeqs: B,
    blockSize,
    numBlocks,
    kvDtype,
    eosTokenIds: [],
    padTokenId: 0,
    sampling,
    stepsInFlight,
  });
  await Promise.all(
    prompts.slice(0, n).map(async (p, r) => {
      let ids: ArrayLike<number> = p;
      for (let t = 0; t < turns; t++) {
        const seed = r * turns + t, maxT = maxTokens[r];
        const out = await engine.submit({ promptIds: ids, maxTokens: maxT, seed });
        ids = [...Array.from(ids), ...out.tokens, ...turnIds(r, t + 1)];
      }
    }),
  );
  const stats = engine.stats();
  await engine.close();
  return stats;
}

async function runGenerate(n: number) {
  for (let start = 0; start < n; start += B) {
    // One row per prompt, its K samples decoded from it (n = K).
    const rows = prompts.slice(start, Math.min(n, start + B)).filter((_, r) => r % K === 0);
    const ids = new Int32Array(rows.length * P);
    rows.forEach((p, b) => ids.set(p, b * P));
    await generate(model, {
      inputIds: ids,
      attentionMask: new Int32Array(ids.length).fill(1),
      batch: rows.length,
      n: K,
      promptLength: P,
      responseLength: Math.max(...maxTokens.slice(start, start + rows.length * K)),
      ...sampling,
      eosTokenIds: [],
      padTokenId: 0,
      seed: 1,
      kvDtype,
    });
  }
}

const common = {
  bench: "engine",
  adapter: g.adapterName,
  dtype,
  kv_dtype: kvDtype,
  layers: config.numHiddenLayers,
  hidden: config.hiddenSize,
  vocab: config.vocabSize,
  requests: N,
  max_seqs: B,
  prompt: P,
  samples_per_prompt: K,
  turns,
  turn_tokens: turns > 1 ? turnTokens : 0,
  new_tokens: `${minNew}..${maxNew}`,
  requested_tokens: wanted,
  sampling: sample ? "top_k 50, top_p 0.9" : "greedy",
};
for (const m of modes) {
  const engine = m !== "generate", share = m !== "engine-noshare";
  const caching = m === "engine";
  // Compile every pipeline first: a short run of the same shapes, every slot filled (a run of
  // fewer requests left the full batch's kernels to compile inside the timed run).
  const warm = Math.min(N, Math.max(2 * K, B));
  if (engine) await runEngine(warm, share, caching);
  else await runGenerate(warm);
  await g.sync();
  g.pool.resetPeak();
  const r = g.recorder;
  r.timeHost = true;
  const rec0 = {
    dispatches: r.dispatches,
    bindGroups: r.bindGroups,
    bindGroupMs: r.bindGroupMs,
    dispatchMs: r.dispatchMs,
    pipelines: g.pipelines.size,
  };
  const t0 = performance.now();
  const stats = engine ? await runEngine(N, share, caching) : (await runGenerate(N), undefined);
  const s = (performance.now() - t0) / 1000;
  console.log(JSON.stringify({
    ...common,
    mode: m,
    ...(stats
      ? {
        block_size: blockSize,
        num_blocks: numBlocks,
        steps: stats.steps,
        prefills: stats.prefills,
        prompt_tokens: stats.promptTokens,
        prefill_tokens: stats.prefillTokens,
        cached_tokens: stats.cachedTokens,
        preemptions: stats.preemptions,
        dropped: stats.dropped,
        peak_blocks: stats.peakBlocks,
        steps_in_flight: stepsInFlight,
        record_s: +stats.recordSeconds.toFixed(3),
        wait_s: +stats.waitSeconds.toFixed(3),
        steps_while_reading: stats.stepsWhileReading,
      }
      : { batches: Math.ceil(N / B) }),
    dispatches: r.dispatches - rec0.dispatches,
    bind_groups_made: r.bindGroups - rec0.bindGroups,
    // Pipelines first compiled inside the timed run (the warm-up's shapes did not cover them).
    pipelines_compiled: g.pipelines.size - rec0.pipelines,
    // Host seconds in the recorder's dispatch calls, and in making bind groups within them.
    dispatch_host_s: +((r.dispatchMs - rec0.dispatchMs) / 1000).toFixed(3),
    bind_group_host_s: +((r.bindGroupMs - rec0.bindGroupMs) / 1000).toFixed(3),
    seconds: +s.toFixed(3),
    tokens_per_s: Math.round(wanted / s),
    peak_gib: +(g.pool.peakBytes / 2 ** 30).toFixed(3),
  }));
}
// --profile N: GPU time per kernel of N requests through each mode (timestamp queries).
const profiled = Number(arg("profile", "0"));
for (const m of profiled > 0 ? ["engine", "generate"] : []) {
  const rows = await g.profile(async () => {
    if (m === "engine") await runEngine(profiled, true);
    else await runGenerate(profiled);
  }, { byPipeline: true });
  const total = rows.reduce((a, r) => a + r.ms, 0);
  const top = rows.sort((a, b) => b.ms - a.ms).slice(0, 12)
    .map((r) => ({ kernel: r.kernel, ms: +r.ms.toFixed(1), count: r.count }));
  console.log(JSON.stringify({ bench: "engine_profile", mode: m, gpu_ms: Math.round(total), top }));
}

model.dispose();
