/**
 * Builds the trainer's parts from in-memory inputs (a config, a tokenizer, weights, prompt items),
 * so the same controller runs in Deno (src/trainer/setup.ts reads the files) and in a browser tab.
 */
import { createKlController } from "../algos/mod.ts";
import type { ModelConfig, Tokenizer } from "../io/mod.ts";
import { AdamW, CausalLM, Critic, type ForwardOptions, HalfWeights } from "../nn/mod.ts";
import { VALUE_HEAD_WEIGHT } from "../nn/mod.ts";
import { gpu } from "../gpu/mod.ts";
import { type LoraStart, loraStart } from "./lora.ts";
import type { AgentInteraction, AgentTool } from "../rollout/mod.ts";
import { RewardManager, rewardManagerOptions } from "../reward/mod.ts";
import type { Tensor } from "../tensor/mod.ts";
import {
  criticEnabled,
  dataSeed,
  enginePoolBlocks,
  engineSettings,
  type PpoConfig,
} from "../config/mod.ts";
import type { Optimizer } from "./optimizer_step.ts";
import { applyPrecision, trainPrecision } from "./precision.ts";
import { DataLoader, type PromptItem } from "../data/mod.ts";
import type { CheckpointStore, TrainerParts } from "./parts.ts";
import { rolloutFor, rolloutPrecision, turnRolloutFor } from "./rollout_fn.ts";

export { checkHalfCache, type RolloutPrecision, rolloutPrecision } from "./rollout_fn.ts";
import type { CausalModel } from "./actor.ts";
import type { Logger } from "../tracking/mod.ts";

export interface ModelWeights {
  config: ModelConfig;
  tensors: Map<string, Float32Array>;
}

export interface BuildOptions {
  config: PpoConfig;
  tokenizer: Tokenizer;
  actor: ModelWeights;
  /** Weights of the frozen reference policy; default: the actor's starting weights. */
  reference?: ModelWeights;
  /**
   * Critic weights: a critic (with its value head) resumes as it was; a causal LM (no value head,
   * e.g. critic.model.path) lends its trunk to a fresh critic. Default: the actor's trunk.
   */
  critic?: ModelWeights | null;
  /**
   * LoRA adapters to start the actor / critic from (a PEFT folder read by setup); default: fresh
   * ones when the config's lora_rank > 0.
   */
  actorLora?: LoraStart | null;
  criticLora?: LoraStart | null;
  /** Ids the rollout stops on; default the tokenizer's EOS (setup adds the folder's). */
  eosTokenIds?: number[];
  trainItems: PromptItem[];
  valItems: PromptItem[];
  tracking: Logger;
  reward?: RewardManager;
  valReward?: RewardManager;
  /** The agent loop's tools (loaded from multi_turn.tool_config_path). */
  tools?: AgentTool[];
  /** The agent loop's interactions (loaded from multi_turn.interaction_config_path). */
  interactions?: AgentInteraction[];
  checkpoints?: CheckpointStore | null;
  print?: (line: string) => void;
  onGenerations?: TrainerParts["onGenerations"];
  shouldContinue?: TrainerParts["shouldContinue"];
  peakMemoryBytes?: () => number;
  peakReservedBytes?: () => number;
}

/** An AdamW over every trainable tensor of a model, with verl's `optim` keys. */
export function makeOptimizer(
  params: Map<string, Tensor>,
  optim: { lr: number; betas: number[]; weight_decay: number; eps?: number },
): Optimizer {
  const list = [...params.values()];
  for (const p of list) p.requiresGrad = true;
  const adamw = new AdamW(list, {
    lr: optim.lr,
    betas: [optim.betas[0], optim.betas[1]],
    eps: optim.eps ?? 1e-8,
    weightDecay: optim.weight_decay,
  });
  return { adamw, params: list };
}

/**
 * The frozen base of a LoRA model: f16 matrices where the GPU has shader-f16 (they get no
 * gradients, so half precision only rounds the base), f32 otherwise.
 */
export function loraBaseDtype(lora: LoraStart | null): "f16" | "f32" {
  return lora && gpu().hasF16 ? "f16" : "f32";
}

/** The actor as the reference policy: the same model with its adapters off (no second copy). */
export function adaptersOff(model: CausalLM): CausalModel {
  return {
    forward: (ids, f) => model.forward(ids, { ...f, disableAdapters: true }),
    tokenLogProbs: (ids, o) => model.tokenLogProbs(ids, { ...o, disableAdapters: true }),
    params: () => model.params(),
    toArrays: () => model.toArrays(),
  };
}

function buildCritic(o: BuildOptions): NonNullable<TrainerParts["critic"]> {
  const cfg = o.config;
  const start = o.critic ?? o.actor;
  const lora = o.criticLora !== undefined ? o.criticLora : loraStart(cfg.critic.model, {
    config: start.config,
    section: "critic.model",
    baseModel: cfg.critic.model.path,
    taskType: "TOKEN_CLS",
    seed: cfg.trainer.seed + 1,
  });
  const tensors = new Map(start.tensors);
  for (const [name, x] of lora?.saved ?? []) tensors.set(name, x);
  const load = { lora: lora ?? undefined, dtype: loraBaseDtype(lora) };
  const net = tensors.has(VALUE_HEAD_WEIGHT)
    ? Critic.fromTensors(start.config, tensors, load)
    : Critic.fromActor(start.config, tensors, { seed: cfg.trainer.seed, ...load });
  net.gradientCheckpointing = cfg.critic.model.enable_gradient_checkpointing;
  const model = {
    forward: (ids: Tensor, f: ForwardOptions) => net.values(ids, f),
    params: () => net.params(),
    toArrays: () => net.toArrays(),
    lora: net.lora,
  };
  const precision = trainPrecision(cfg.critic.model.fsdp_config.mixed_precision.param_dtype, {
    key: "critic.model.fsdp_config.mixed_precision.param_dtype",
    notice: o.print ?? console.warn,
  });
  const optimizer = makeOptimizer(net.trainable(), cfg.critic.optim);
  return { model, optimizer: applyPrecision(precision, net, optimizer) };
}

export function buildTrainerParts(o: BuildOptions): TrainerParts {
  const cfg = o.config;
  const a = cfg.actor_rollout_ref;
  const lora = o.actorLora !== undefined ? o.actorLora : loraStart(a.model, {
    config: o.actor.config,
    section: "actor_rollout_ref.model",
    baseModel: a.model.path,
    seed: cfg.trainer.seed,
  });
  const actorModel = CausalLM.fromTensors(o.actor.config, o.actor.tensors, {
    lora: lora ?? undefined,
    dtype: loraBaseDtype(lora),
  });
  actorModel.gradientCheckpointing = a.model.enable_gradient_checkpointing;
  const precision = trainPrecision(a.actor.fsdp_config.mixed_precision.param_dtype, {
    key: "actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype",
    notice: o.print ?? console.warn,
  });
  const actorOptimizer = applyPrecision(
    precision,
    actorModel,
    makeOptimizer(actorModel.trainable(), a.actor.optim),
  );
  const useRef = a.actor.use_kl_loss || cfg.algorithm.use_kl_in_reward;
  const refW = o.reference ?? o.actor;
  const refCopy = useRef && !lora ? CausalLM.fromTensors(refW.config, refW.tensors) : null;
  // The reference computes in the actor's precision (verl's ref shares the actor's FSDP dtype), so
  // the KL starts at 0; its weights never change, so its f16 copies are made once.
  if (refCopy && precision === "f16") refCopy.mixedPrecision = new HalfWeights();
  const refModel = !useRef ? null : lora ? adaptersOff(actorModel) : refCopy;
  const critic = criticEnabled(cfg) ? buildCritic(o) : null;
  const pool = { ...engineSettings(a.rollout), key: "actor_rollout_ref.rollout.kv_cache_tokens" };
  // A budget too small for one sequence of the longest prompt and response fails now.
  enginePoolBlocks({
    ...pool,
    sequences: 1,
    longest: cfg.data.max_prompt_length + cfg.data.max_response_length,
  });
  const rolloutOptions = {
    precision: rolloutPrecision(a.rollout.dtype, {
      key: "actor_rollout_ref.rollout.dtype",
      headDim: o.actor.config.headDim,
      notice: o.print ?? console.warn,
    }),
    engine: pool,
  };
  const reward = o.reward ??
    new RewardManager({ tokenizer: o.tokenizer, log: o.print, ...rewardManagerOptions(cfg) });
  return {
    config: cfg,
    tokenizer: o.tokenizer,
    actor: { model: actorModel, optimizer: actorOptimizer },
    ref: refModel,
    critic,
    rollout: rolloutFor(actorModel, o.tokenizer, o.eosTokenIds, rolloutOptions),
    turnRollout: turnRolloutFor(actorModel, o.tokenizer, o.eosTokenIds, rolloutOptions),
    trainLoader: new DataLoader(o.trainItems, {
      batchSize: cfg.data.gen_batch_size,
      shuffle: cfg.data.shuffle,
      seed: dataSeed(cfg),
    }),
    valItems: o.valItems,
    reward,
    valReward: o.valReward ?? reward,
    tools: o.tools,
    interactions: o.interactions,
    tracking: o.tracking,
    klCtrl: useRef ? createKlController(cfg.algorithm.kl_ctrl) : null,
    checkpoints: o.checkpoints ?? null,
    print: o.print,
    onGenerations: o.onGenerations,
    shouldContinue: o.shouldContinue,
    peakMemoryBytes: o.peakMemoryBytes,
    peakReservedBytes: o.peakReservedBytes,
  };
}
