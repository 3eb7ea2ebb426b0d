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
import { charTokenizer } from "../src/io/mod.ts";
import { makeModelConfig } from "../src/io/mod.ts";
import { initWeights, weightShapes } from "../src/nn/mod.ts";
import { RewardManager } from "../src/reward/mod.ts";
import { buildTrainerParts } from "../src/trainer/mod.ts";
import { loadConfig } from "../src/config/mod.ts";
import { trainStep } from "../src/trainer/mod.ts";
import type { PromptItem } from "../src/data/mod.ts";

const raw = (name: string) => Deno.args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1];
const arg = (name: string, d: number) => Number(raw(name) ?? d);
/** Qwen2.5 shapes (config.json of the Hugging Face checkpoints). */
const SHAPES = {
  "0.5b": { hidden: 896, intermediate: 4864, layers: 24, heads: 14, kvHeads: 2 },
  "1.5b": { hidden: 1536, intermediate: 8960, layers: 28, heads: 12, kvHeads: 2 },
};
const shapeName = raw("shape") ?? "0.5b";
if (!(shapeName in SHAPES)) throw new Error(`--shape=${shapeName}: use 0.5b or 1.5b`);
const shape = SHAPES[shapeName as keyof typeof SHAPES];
const prompts = arg("prompts", 8), n = arg("n", 8), P = arg("prompt-len", 128);
const R = arg("response-len", 256), micro = arg("micro", 8), layers = arg("layers", shape.layers);
const steps = arg("steps", 2), vocab = arg("vocab", 151936), hidden = arg("hidden", shape.hidden);
const checkpointing = arg("checkpointing", 0) !== 0, maxTokens = arg("max-tokens", 0);

const g = await initGpu();
const config = makeModelConfig({
  modelType: "qwen2",
  hiddenSize: hidden,
  intermediateSize: shape.intermediate,
  numHiddenLayers: layers,
  numAttentionHeads: shape.heads,
  numKeyValueHeads: shape.kvHeads,
  vocabSize: vocab,
  eosTokenId: vocab - 1,
  maxPositionEmbeddings: 4096,
  tieWordEmbeddings: true,
  ropeTheta: 1e6,
});
const tensors = initWeights(weightShapes(config), { seed: 0 });
let seed = 1;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
const items: PromptItem[] = Array.from({ length: prompts * 4 }, (_, i) => ({
  index: i,
  inputIds: Array.from({ length: P }, () => Math.floor(rand() * Math.min(150000, vocab - 1))),
  dataSource: "random",
  groundTruth: "",
  extraInfo: {},
}));
// Random 0/1 scores, so GRPO groups have non-zero advantages.
const reward = new RewardManager({
  scorer: {
    scoreBatch: (s) => Promise.resolve(s.map(() => ({ ok: true, value: rand() < 0.5 ? 1 : 0 }))),
    close() {},
  },
  tokenizer: charTokenizer(),
});
const cfg = loadConfig("ppo_trainer", {
  skipPathChecks: true,
  overrides: [
    `data.train_batch_size=${prompts}`,
    `data.max_prompt_length=${P}`,
    `data.max_response_length=${R}`,
    `actor_rollout_ref.rollout.n=${n}`,
    `actor_rollout_ref.actor.ppo_mini_batch_size=${prompts}`,
    `actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=${micro}`,
    `actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=${micro}`,
    "actor_rollout_ref.rollout.top_k=-1",
    "actor_rollout_ref.actor.use_kl_loss=false",
    "algorithm.adv_estimator=grpo",
    `actor_rollout_ref.model.enable_gradient_checkpointing=${checkpointing}`,
    ...(maxTokens > 0
      ? [
        "actor_rollout_ref.actor.use_dynamic_bsz=true",
        `actor_rollout_ref.actor.ppo_max_token_len_per_gpu=${maxTokens}`,
      ]
      : []),
  ],
});
const parts = buildTrainerParts({
  config: cfg,
  tokenizer: charTokenizer(),
  actor: { config, tensors },
  trainItems: items,
  valItems: [],
  tracking: { log() {}, close() {} },
  reward,
  peakMemoryBytes: () => g.pool.peakBytes,
  peakReservedBytes: () => g.pool.peakReservedBytes,
});
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
