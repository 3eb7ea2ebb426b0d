/**
 * One GRPO training step on a Qwen2.5 shape (0.5B or 1.5B, full 151,936-token vocabulary) with
 * random weights, through the same stages `fit()` runs (gen, reward, old_log_prob, adv,
 * update_actor), printing per-stage timings, tokens/s and peak GPU memory (the buffer pool's
 * perf/max_memory_allocated_gb and perf/max_memory_reserved_gb) as JSON lines. For a GPU machine:
 * `deno run -A bench/grpo_step_device.ts [--shape=0.5b|1.5b] [--prompts=8] [--n=8]
 * [--prompt-len=128] [--response-len=256] [--micro=8] [--layers=N] [--vocab=151936]
 * [--checkpointing=1] [--max-tokens=N]`: --checkpointing turns on
 * enable_gradient_checkpointing, --max-tokens turns on use_dynamic_bsz with that token budget
 * (ppo_max_token_len_per_gpu, also the log-prob passes'). bench/README.md has the commands.
 */
import { initGpu } from "../src/gpu/mod.ts";
import { initWeights, weightShapes } from "../src/nn/mod.ts";
import { loadConfig } from "../src/config/mod.ts";
import { trainStep } from "../src/trainer/mod.ts";
import {
  benchParts,
  coinFlipReward,
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
const reward = coinFlipReward(rand);
const cfg = loadConfig("ppo_trainer", {
  skipPathChecks: true,
  overrides: [
    ...grpoStepOverrides({ prompts, n, promptLength: P, responseLength: R, micro }),
    "actor_rollout_ref.actor.use_kl_loss=false",
    `actor_rollout_ref.model.enable_gradient_checkpointing=${checkpointing}`,
    ...(maxTokens > 0
      ? [
        "actor_rollout_ref.actor.use_dynamic_bsz=true",
        `actor_rollout_ref.actor.ppo_max_token_len_per_gpu=${maxTokens}`,
      ]
      : []),
  ],
});
const parts = benchParts({ config: cfg, model: config, tensors, items, reward });
console.log(JSON.stringify({
  adapter: g.adapterName,
  shape: shapeName,
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
}));
for (let step = 1; step <= steps; step++) {
  const m = await trainStep(parts, step, parts.trainLoader.next()!);
  const pick = Object.fromEntries(
    Object.entries(m).filter(([k]) =>
      k.startsWith("timing_s/") || k.startsWith("perf/") || k === "response_length/mean" ||
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
}
