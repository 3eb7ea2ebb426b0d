/**
 * What the GRPO-step benches share: the Qwen2.5 shapes (config.json of the Hugging Face
 * checkpoints), random prompts, coin-flip rewards (so GRPO groups have non-zero advantages) and
 * the overrides that make one step of `prompts` x `n` samples of `P` + `R` tokens.
 */
import { makeModelConfig, type ModelConfig, type ModelConfigInit } from "../src/io/mod.ts";
import { charTokenizer } from "../src/io/mod.ts";
import { RewardManager } from "../src/reward/mod.ts";
import type { PromptItem } from "../src/data/mod.ts";
import { gpu } from "../src/gpu/mod.ts";
import type { PpoConfig } from "../src/config/mod.ts";
import { buildTrainerParts, type RolloutFn, type TrainerParts } from "../src/trainer/mod.ts";

export const QWEN25_VOCAB = 151936;

export const QWEN25_SHAPES = {
  "0.5b": {
    hiddenSize: 896,
    intermediateSize: 4864,
    numHiddenLayers: 24,
    numAttentionHeads: 14,
    numKeyValueHeads: 2,
  },
  "1.5b": {
    hiddenSize: 1536,
    intermediateSize: 8960,
    numHiddenLayers: 28,
    numAttentionHeads: 12,
    numKeyValueHeads: 2,
  },
} satisfies Record<string, Partial<ModelConfigInit>>;

export type Qwen25Shape = keyof typeof QWEN25_SHAPES;

export function isQwen25Shape(name: string): name is Qwen25Shape {
  return name in QWEN25_SHAPES;
}

/** One product of a training step: C [m, n] = op(A) @ op(B) over K. */
export type StepProduct = [
  name: string,
  m: number,
  n: number,
  k: number,
  transA: boolean,
  transB: boolean,
];

/**
 * The linear layers' products of a training step at `rows` tokens: forward (x W^T), input
 * gradient (g W) and weight gradient (g^T x) of q, k (= v), gate (= up) and down.
 */
export function linearProducts(shape: Qwen25Shape, rows: number): StepProduct[] {
  const s = QWEN25_SHAPES[shape];
  const kv = s.numKeyValueHeads * (s.hiddenSize / s.numAttentionHeads);
  const products: StepProduct[] = [];
  for (
    const [name, out, inF] of [
      ["q", s.hiddenSize, s.hiddenSize],
      ["kv", kv, s.hiddenSize],
      ["gate", s.intermediateSize, s.hiddenSize],
      ["down", s.hiddenSize, s.intermediateSize],
    ] as const
  ) {
    products.push([`${name}.forward`, rows, out, inF, false, true]);
    products.push([`${name}.input_grad`, rows, inF, out, false, false]);
    products.push([`${name}.weight_grad`, out, inF, rows, true, false]);
  }
  return products;
}

/** A Qwen2.5-shaped config (tied embeddings, rope theta 1e6); `o` overrides any field. */
export function qwen25Config(shape: Qwen25Shape, o: Partial<ModelConfigInit> = {}): ModelConfig {
  const vocabSize = o.vocabSize ?? QWEN25_VOCAB;
  return makeModelConfig({
    modelType: "qwen2",
    eosTokenId: vocabSize - 1,
    maxPositionEmbeddings: 4096,
    tieWordEmbeddings: true,
    ropeTheta: 1e6,
    ...QWEN25_SHAPES[shape],
    ...o,
    vocabSize, // `o.vocabSize: undefined` must not undo the default
  });
}

/** A seeded linear congruential generator in [0, 1). */
export function lcg(seed = 1): () => number {
  let s = seed;
  return () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32);
}

/** `count` prompts of `promptLength` ids drawn from [lo, hi). */
export function randomPrompts(
  count: number,
  o: {
    promptLength: number;
    ids: [lo: number, hi: number];
    rand: () => number;
    dataSource?: string;
    groundTruth?: string;
  },
): PromptItem[] {
  const [lo, hi] = o.ids;
  return Array.from({ length: count }, (_, i) => ({
    index: i,
    inputIds: Array.from({ length: o.promptLength }, () => lo + Math.floor(o.rand() * (hi - lo))),
    dataSource: o.dataSource ?? "random",
    groundTruth: o.groundTruth ?? "",
    extraInfo: {},
  }));
}

/** Scores every response 0 or 1 at random. */
export function coinFlipReward(rand: () => number): RewardManager {
  return new RewardManager({
    scorer: {
      scoreBatch: (s) => Promise.resolve(s.map(() => ({ ok: true, value: rand() < 0.5 ? 1 : 0 }))),
      close() {},
    },
    tokenizer: charTokenizer(),
  });
}

/** One GRPO step of `prompts` x `n` samples, one mini-batch, `micro`-sample micro-batches. */
export function grpoStepOverrides(
  o: { prompts: number; n: number; promptLength: number; responseLength: number; micro: number },
): string[] {
  return [
    `data.train_batch_size=${o.prompts}`,
    `data.max_prompt_length=${o.promptLength}`,
    `data.max_response_length=${o.responseLength}`,
    `actor_rollout_ref.rollout.n=${o.n}`,
    `actor_rollout_ref.actor.ppo_mini_batch_size=${o.prompts}`,
    `actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=${o.micro}`,
    `actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=${o.micro}`,
    "actor_rollout_ref.rollout.top_k=-1",
    "algorithm.adv_estimator=grpo",
  ];
}

/** Trainer parts for a bench step: no validation, no logging, the buffer pool's peaks. */
export function benchParts(o: {
  config: PpoConfig;
  model: ModelConfig;
  tensors: Map<string, Float32Array>;
  items: PromptItem[];
  reward: RewardManager;
}): TrainerParts {
  const pool = gpu().pool;
  return buildTrainerParts({
    config: o.config,
    tokenizer: charTokenizer(),
    actor: { config: o.model, tensors: o.tensors },
    trainItems: o.items,
    valItems: [],
    tracking: { log() {}, close() {} },
    reward: o.reward,
    peakMemoryBytes: () => pool.peakBytes,
    peakReservedBytes: () => pool.peakReservedBytes,
  });
}

/**
 * A rollout whose responses end at a random EOS: each row keeps a length drawn from [1, R] and
 * the rest becomes padding (mask 0, id 0), so the passes after gen see a ragged batch.
 */
export function cutAtRandomEos(rollout: RolloutFn, rand: () => number): RolloutFn {
  return async (prompts, o) => {
    const out = await rollout(prompts, o);
    const R = o.responseLength, rows = out.responseMask.length / R;
    for (let b = 0; b < rows; b++) {
      const keep = 1 + Math.floor(rand() * R);
      out.responseMask.fill(0, b * R + keep, b * R + R);
      out.responses.fill(0, b * R + keep, b * R + R);
    }
    return out;
  };
}
