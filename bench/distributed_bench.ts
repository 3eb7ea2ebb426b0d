/**
 * The distributed rollout against the single-process step, on the same random-weight model:
 * a local nats-server, the trainer in this process, `--workers` worker processes
 * (`deno task worker`), `--steps` GRPO steps; prints one JSON line per step and a summary (step
 * time, tokens/s, bytes moved per step, job latency). `--workers=0` is the single-process
 * baseline (distributed.backend=none).
 *
 *   deno run -A bench/distributed_bench.ts --shape=tiny --workers=1      # CPU machine
 *   deno run -A bench/distributed_bench.ts --shape=0.5b --workers=0      # one GPU
 *   deno run -A bench/distributed_bench.ts --shape=0.5b --workers=1 --pin --staleness=1
 *
 * `--bypass=1` sets algorithm.rollout_correction.bypass_mode=true (calculate_log_probs is always
 * on here): no old_log_prob pass; with workers, their log-probs are checked inside the update.
 *
 * `--cast-on-gpu=0` reads the trainer's weights back as f32 and converts them on the publishing
 * thread instead of casting to f16 on the GPU first (the default where the GPU has shader-f16).
 *
 * Other flags: --steps=4 --prompts --n --prompt-len --response-len --micro --layers,
 * --nats-server=PATH (default `nats-server` on the PATH). bench/README.md has the 2-GPU recipe.
 *
 * `--pin` runs worker i on GPU i+1 (the trainer keeps GPU 0, Deno's first adapter): each worker
 * starts in a private mount namespace whose /dev/nvidia0..i are /dev/null, so Vulkan sees only
 * the GPUs after them (root or CAP_SYS_ADMIN; CUDA_VISIBLE_DEVICES does not apply to Vulkan).
 */
import { initGpu } from "../src/gpu/mod.ts";
import {
  charTokenizer,
  charTokenizerTexts,
  makeModelConfig,
  type ModelConfig,
} from "../src/io/mod.ts";
import { initWeights, weightShapes } from "../src/nn/mod.ts";
import { ARITHMETIC_DATA_SOURCE } from "../src/reward/mod.ts";
import { attachRemote, buildTrainerParts, trainStep } from "../src/trainer/mod.ts";
import { loadConfig } from "../src/config/mod.ts";
import { startNatsServer } from "../src/distributed/mod.ts";
import { grpoStepOverrides, lcg, qwen25Config, randomPrompts } from "./grpo_setup.ts";

const arg = (name: string, d: string) =>
  Deno.args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? d;
const num = (name: string, d: number) => Number(arg(name, String(d)));
const shape = arg("shape", "tiny"), workers = num("workers", 1), steps = num("steps", 4);
const staleness = num("staleness", 0), pin = Deno.args.includes("--pin");
const bypass = num("bypass", 0) === 1;
const castOnGpu = arg("cast-on-gpu", "");
const big = shape === "0.5b";
const prompts = num("prompts", big ? 8 : 8), n = num("n", big ? 8 : 4);
const P = num("prompt-len", big ? 128 : 8), R = num("response-len", big ? 256 : 16);
const micro = num("micro", big ? 8 : 32);

const g = await initGpu();
const tok = charTokenizer();
const config: ModelConfig = big
  ? qwen25Config("0.5b", { numHiddenLayers: num("layers", 24), eosTokenId: tok.eosTokenId })
  : makeModelConfig({
    modelType: "qwen2",
    hiddenSize: 64,
    intermediateSize: 128,
    numHiddenLayers: 2,
    numAttentionHeads: 4,
    numKeyValueHeads: 2,
    vocabSize: tok.vocabSize,
    eosTokenId: tok.eosTokenId,
    maxPositionEmbeddings: 256,
    tieWordEmbeddings: true,
    ropeTheta: 1e4,
  });
const tensors = initWeights(weightShapes(config), { seed: 0 });
const items = randomPrompts(prompts * (steps + 2), {
  promptLength: P,
  ids: [1, tok.vocabSize - 1],
  rand: lcg(1),
  dataSource: ARITHMETIC_DATA_SOURCE,
  groundTruth: "7",
});
const prefix = "webrl.bench.distributed";
// --nats-server=PATH: a carried binary on machines without Debian's package (or a network).
const binary = arg("nats-server", "nats-server");
const server = workers > 0 ? await startNatsServer({ prefix, wsPort: null, binary }) : null;
const cfg = loadConfig("ppo_trainer", {
  skipPathChecks: true,
  overrides: [
    ...grpoStepOverrides({ prompts, n, promptLength: P, responseLength: R, micro }),
    "actor_rollout_ref.rollout.calculate_log_probs=true",
    "actor_rollout_ref.actor.use_kl_loss=false",
    `trainer.total_training_steps=${steps}`,
    // --bypass=1: the rollout's log-probs are the old ones (no old_log_prob pass)
    ...(bypass ? ["algorithm.rollout_correction.bypass_mode=true"] : []),
    ...(server
      ? [
        "distributed.backend=nats",
        `distributed.url=${server.url}`,
        `distributed.subject_prefix=${prefix}`,
        `distributed.nkey_seed=${server.trainerSeed}`,
        `distributed.max_staleness=${staleness}`,
      ]
      : []),
  ],
});
const parts = buildTrainerParts({
  config: cfg,
  tokenizer: tok,
  actor: { config, tensors },
  trainItems: items,
  valItems: [],
  tracking: { log() {}, close() {} },
  peakMemoryBytes: () => g.pool.peakBytes,
});
const procs: Deno.ChildProcess[] = [];
if (server) {
  await attachRemote(parts, {
    modelConfig: config,
    tokenizerFiles: charTokenizerTexts(),
    eosTokenIds: [tok.eosTokenId],
    castOnGpu: castOnGpu === "" ? undefined : castOnGpu === "1",
  });
  const worker = new URL("../src/cli/worker.ts", import.meta.url).pathname;
  for (let i = 0; i < workers; i++) {
    const cmd = [Deno.execPath(), "run", "-A", worker, "--url", server.url, "--prefix", prefix];
    const hide = Array.from({ length: i + 1 }, (_, k) => `mount --bind /dev/null /dev/nvidia${k}`);
    const argv = pin
      ? ["unshare", "-m", "sh", "-c", `${hide.join(" && ")} && exec "$@"`, "sh", ...cmd]
      : cmd;
    procs.push(
      new Deno.Command(argv[0], {
        args: [...argv.slice(1), "--id", `w${i}`],
        env: { NATS_NKEY_SEED: server.workerSeed },
        stdout: "null",
      }).spawn(),
    );
  }
}
console.log(
  JSON.stringify({
    adapter: g.adapterName,
    shape,
    workers,
    staleness,
    bypass,
    pin,
    prompts,
    n,
    P,
    R,
  }),
);
const rows: Record<string, number>[] = [];
for (let step = 1; step <= steps; step++) {
  const m = await trainStep(parts, step, parts.trainLoader.next()!);
  const keep = Object.fromEntries(
    Object.entries(m).filter(([k]) =>
      k.startsWith("timing_s/") || k.startsWith("distributed/") || k === "perf/throughput" ||
      k === "response_length/mean"
    ).map(([k, v]) => [k, Math.round(v * 1e4) / 1e4]),
  );
  rows.push(keep);
  console.log(JSON.stringify({ fig: "distributed_step", step, ...keep }));
}
// Step 1 compiles pipelines and (distributed) waits for workers to start: left out of the means.
const later = rows.slice(1);
const mean = (k: string) => later.reduce((a, r) => a + (r[k] ?? 0), 0) / Math.max(1, later.length);
const bytes = mean("distributed/bytes_jobs") + mean("distributed/bytes_trajectories") +
  mean("distributed/bytes_weights");
console.log(JSON.stringify({
  fig: "distributed_summary",
  shape,
  workers,
  staleness,
  bypass,
  step_s: mean("timing_s/step"),
  old_log_prob_s: mean("timing_s/old_log_prob"),
  update_actor_s: mean("timing_s/update_actor"),
  gen_wait_s: mean("timing_s/gen"),
  tokens_per_s: mean("perf/throughput"),
  bytes_per_step: Math.round(bytes),
  bytes_weights: Math.round(mean("distributed/bytes_weights")),
  job_latency_s: mean("distributed/job_latency_s/mean"),
  worker_gen_s: mean("distributed/worker_gen_s/mean"),
  rejected_groups: mean("distributed/rejected_groups"),
  // Where a weights version's time goes: the trainer's readback and publication, the worker's
  // fetch, decode and build, and how long its jobs waited for it (0: fetched before they came).
  publish_weights_s: mean("timing_s/publish_weights"),
  publish_readback_s: mean("distributed/publish_readback_s"),
  publish_encode_s: mean("distributed/publish_encode_s"),
  publish_upload_s: mean("distributed/publish_upload_s"),
  weights_fetch_s: mean("distributed/weights_fetch_s"),
  weights_decode_s: mean("distributed/weights_decode_s"),
  weights_build_s: mean("distributed/weights_build_s"),
  weights_wait_s: mean("distributed/weights_wait_s/mean"),
  weights_eager_frac: mean("distributed/weights_eager_frac"),
  logprob_diff_max: Math.max(...later.map((r) => r["distributed/logprob_diff/max"] ?? 0)),
}));
await parts.remote?.close();
for (const p of procs) {
  p.kill("SIGTERM");
  await p.status;
}
await server?.stop();
Deno.exit(0);
