/**
 * One GRPO training step on a Qwen2.5 shape (0.5B or 1.5B, full 151,936-token vocabulary) with
 * random weights, through the same stages `fit()` runs (gen, reward, old_log_prob, adv,
 * update_actor), printing per-stage timings, tokens/s and peak GPU memory (the buffer pool's
 * perf/max_memory_allocated_gb and perf/max_memory_reserved_gb) as JSON lines. For a GPU machine:
 * `deno run -A bench/grpo_step_device.ts [--shape=0.5b|1.5b] [--prompts=8] [--n=8]
 * [--prompt-len=128] [--response-len=256] [--micro=8] [--layers=N] [--vocab=151936]
 * [--checkpointing=1] [--max-tokens=N] [--rmpad=1] [--ragged=1] [--rollout=engine|generate]
 * [--vec4=0] [--exact=0] [--tails=0] [--woven-max-m=N] [--keep-logits-gb=G]
 * [--split-element-cost=X]`:
 * --keep-logits-gb sets
 * actor.keep_logits_gb (the update's LM-head logits kept from forward to backward within G GB);
 * --vec4=0 keeps the tiled GEMM on scalar reads and --exact=0 keeps its bounds checks on whole
 * blocks (before/after runs); --tails=0 runs no product's last wave apart (`splitPlan`);
 * --woven-max-m sets the most rows whose gate and up run as one woven product off the tape
 * (`swigluWovenPolicy.maxM`: 0 never, 6144 old_log_prob's micro-batches of 16 too);
 * --split-element-cost sets the K-split wave model's cost of a partial
 * element (`splitPolicy.elementCost`);
 * --rollout picks gen's decoding: the continuous-batching engine (the trainer's default) or
 * `generate`'s lock-step batch; --checkpointing turns on
 * enable_gradient_checkpointing, --max-tokens turns on use_dynamic_bsz with that token budget
 * (ppo_max_token_len_per_gpu, also the log-prob passes'), --rmpad turns on
 * actor_rollout_ref.model.use_remove_padding (packed sequences), --ragged makes the batch ragged:
 * prompt lengths drawn from [P/4, P] (left-padded) and each response cut at a random EOS, a length
 * drawn from [1, R] (the decode still runs R steps: gen's time is not ragged, the passes after it
 * are). --gaps=N profiles the last step with every dispatch timed and prints where the GPU sat
 * idle: its busy share of the step and of the update (the step's last `timing_s/update_actor`
 * seconds) and the update's N longest gaps, each named by the kernels around it (profiling
 * stretches the step: compare gaps, not times). --kernels=N (with or without --gaps) prints the N
 * kernels (whole pipeline keys) with the most GPU time in that update window, each workgroup grid
 * apart with --by-grid=1 (which shapes of a kernel take the time). bench/README.md has
 * the commands.
 */
import { gpuGaps, initGpu, type KernelSpan, kernelTotals } from "../src/gpu/mod.ts";
import { type CausalLM, initWeights, weightShapes } from "../src/nn/mod.ts";
import { charTokenizer } from "../src/io/mod.ts";
import { loadPolicy, splitPolicy, swigluWovenPolicy } from "../src/tensor/mod.ts";
import { loadConfig } from "../src/config/mod.ts";
import { rolloutFor, rolloutPrecision, trainStep } from "../src/trainer/mod.ts";
import {
  benchParts,
  coinFlipReward,
  cutAtRandomEos,
  grpoStepOverrides,
  isQwen25Shape,
  lcg,
  QWEN25_SHAPES,
  qwen25Config,
  randomPrompts,
} from "./grpo_setup.ts";

const raw = (name: string) => Deno.args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1];
const arg = (name: string, d: number) => Number(raw(name) ?? d);
const shapeName = raw("shape") ?? "0.5b";
if (!isQwen25Shape(shapeName)) throw new Error(`--shape=${shapeName}: use 0.5b or 1.5b`);
const shape = QWEN25_SHAPES[shapeName];
const prompts = arg("prompts", 8), n = arg("n", 8), P = arg("prompt-len", 128);
const R = arg("response-len", 256),
  micro = arg("micro", 8),
  layers = arg("layers", shape.numHiddenLayers);
const steps = arg("steps", 2),
  vocab = arg("vocab", 151936),
  hidden = arg("hidden", shape.hiddenSize);
const checkpointing = arg("checkpointing", 0) !== 0, maxTokens = arg("max-tokens", 0);
const rmpad = arg("rmpad", 0) !== 0, ragged = arg("ragged", 0) !== 0;
// --vec4=0: the tiled GEMM reads its operands one element at a time; --exact=0: it checks bounds
// on whole blocks too (before/after runs).
if (arg("vec4", 1) === 0) loadPolicy.vec4 = false;
// --split-element-cost=X: the wave model's cost of a K-split partial element (splitPolicy).
if (raw("split-element-cost")) splitPolicy.elementCost = arg("split-element-cost", 0);
if (arg("exact", 1) === 0) loadPolicy.exact = false;
// --tails=0: no product runs its last wave apart (splitPolicy.tails; before/after runs).
if (arg("tails", 1) === 0) splitPolicy.tails = false;
// --woven-max-m=N: the most rows whose gate and up run as one woven product (before/after runs).
if (raw("woven-max-m")) swigluWovenPolicy.maxM = arg("woven-max-m", 0);
const rolloutMode = raw("rollout") ?? "engine";
if (rolloutMode !== "engine" && rolloutMode !== "generate") {
  throw new Error(`--rollout=${rolloutMode}: use engine or generate`);
}

const g = await initGpu();
const config = qwen25Config(shapeName, {
  hiddenSize: hidden,
  numHiddenLayers: layers,
  vocabSize: vocab,
});
const tensors = initWeights(weightShapes(config), { seed: 0 });
const rand = lcg(1);
const ids: [number, number] = [0, Math.min(150000, vocab - 1)];
const items = randomPrompts(prompts * 4, { promptLength: P, ids, rand });
if (ragged) {
  for (const it of items) it.inputIds.length = Math.max(1, Math.ceil(P * (0.25 + 0.75 * rand())));
}
const reward = coinFlipReward(rand);
const cfg = loadConfig("ppo_trainer", {
  skipPathChecks: true,
  overrides: [
    ...grpoStepOverrides({ prompts, n, promptLength: P, responseLength: R, micro }),
    "actor_rollout_ref.actor.use_kl_loss=false",
    `actor_rollout_ref.model.enable_gradient_checkpointing=${checkpointing}`,
    `actor_rollout_ref.model.use_remove_padding=${rmpad}`,
    `actor_rollout_ref.actor.keep_logits_gb=${raw("keep-logits-gb") ?? 0}`,
    ...(maxTokens > 0
      ? [
        "actor_rollout_ref.actor.use_dynamic_bsz=true",
        `actor_rollout_ref.actor.ppo_max_token_len_per_gpu=${maxTokens}`,
      ]
      : []),
  ],
});
const built = benchParts({ config: cfg, model: config, tensors, items, reward });
if (rolloutMode === "generate") {
  const precision = rolloutPrecision(cfg.actor_rollout_ref.rollout.dtype, {
    key: "actor_rollout_ref.rollout.dtype",
    notice: console.warn,
  });
  const model = built.actor.model as CausalLM;
  built.rollout = rolloutFor(model, charTokenizer(), undefined, { engine: null, precision });
}
const parts = ragged ? { ...built, rollout: cutAtRandomEos(built.rollout, lcg(7)) } : built;
console.log(JSON.stringify({
  adapter: g.adapterName,
  shape: shapeName,
  rollout: rolloutMode,
  hidden,
  layers,
  vocab,
  prompts,
  n,
  P,
  R,
  micro,
  checkpointing,
  max_tokens: maxTokens || null,
  rmpad,
  ragged,
}));
const gaps = arg("gaps", 0);
const kernels = arg("kernels", 0);
for (let step = 1; step <= steps; step++) {
  const spans: KernelSpan[] = [];
  let m: Record<string, number> = {};
  const run = async () => void (m = await trainStep(parts, step, parts.trainLoader.next()!));
  const profiled = (gaps > 0 || kernels > 0) && step === steps;
  if (profiled) await g.profile(run, { spans, maxPasses: 1 << 20 });
  else await run();
  const pick = Object.fromEntries(
    Object.entries(m).filter(([k]) =>
      k.startsWith("timing_s/") || k.startsWith("perf/") || k === "response_length/mean" ||
      k === "prompt_length/mean" ||
      k === "actor/grad_norm"
    ).map(([k, v]) => [k, Math.round(v * 1000) / 1000]),
  );
  const genTokens = prompts * n * m["response_length/mean"];
  console.log(JSON.stringify({
    fig: "grpo_step",
    step,
    ...pick,
    gen_tok_per_s: Math.round(genTokens / m["timing_s/gen"]),
    update_tok_per_s: Math.round((prompts * n * (P + R)) / m["timing_s/update_actor"]),
  }));
  if (spans.length === 0) continue;
  const round = (x: number) => Math.round(x * 10) / 10;
  const whole = gpuGaps(spans);
  const upd = gpuGaps(spans, { lastMs: m["timing_s/update_actor"] * 1000, top: gaps });
  console.log(JSON.stringify({
    fig: "gpu_gaps",
    step,
    dispatches: spans.length,
    step_gpu_span_ms: round(whole.spanMs),
    step_busy_ms: round(whole.busyMs),
    update_window_ms: round(upd.windowMs),
    update_busy_ms: round(upd.windowBusyMs),
  }));
  for (const gap of upd.gaps) {
    console.log(
      JSON.stringify({ fig: "gpu_gap", ...gap, atMs: round(gap.atMs), ms: round(gap.ms) }),
    );
  }
  const byGrid = arg("by-grid", 0) !== 0;
  const totals = kernelTotals(spans, { lastMs: m["timing_s/update_actor"] * 1000, byGrid });
  for (const t of totals.slice(0, kernels)) {
    console.log(
      JSON.stringify({ fig: "update_kernel", ms: round(t.ms), count: t.count, key: t.kernel }),
    );
  }
}
