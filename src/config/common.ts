/** Sections shared by several schemas (optimizer, checkpoint contents). */
import { ConfigError } from "./errors.ts";
import { LEGACY_WORKERS, ONE_GPU_MODEL } from "./verl_reasons.ts";
import {
  bool,
  float,
  floatList,
  int,
  mapOrNull,
  names,
  oneOf,
  oneOfOrNull,
  section,
  str,
  strList,
} from "./schema.ts";

/**
 * verl's `strategy` key. fsdp / fsdp2 on one GPU (no shard group, nothing offloaded: what the
 * fsdp_config keys accept) train as the built-in WebGPU trainer does, so they are accepted as
 * names for it; megatron (tensor / pipeline parallel) is refused in checkStrategy.
 */
export function trainingStrategy() {
  return oneOf(
    ["webgpu", "fsdp", "fsdp2", "megatron"],
    "webgpu",
    "Training backend: webgpu, the built-in trainer on one GPU; verl's fsdp and fsdp2 name the " +
      "same on one GPU (no sharding, no offload); megatron is refused.",
  );
}

/** Refuses verl's megatron backend, naming `key`. */
export function checkStrategy(key: string, value: string): void {
  if (value !== "megatron") return;
  throw new ConfigError(
    key,
    `${key}=megatron: verl's Megatron backend (tensor and pipeline parallelism) does not exist ` +
      "here; training runs on one GPU (webgpu, or verl's fsdp / fsdp2 names for it)",
  );
}

/** verl's rollout `name` key: its engines by name, refused with the reason; `webgpu` is ours. */
export function rolloutEngineName(doc: string) {
  return oneOf(["webgpu", "vllm", "sglang", "hf"], "webgpu", doc).unsupported(
    "rollouts run on the built-in WebGPU engine (continuous batching over a paged KV cache, " +
      "src/rollout/engine.ts); verl's vLLM, SGLang and HF engines do not exist here",
  );
}

/** verl's `data.train_max_samples` / `val_max_samples` (src/data/max_samples.ts), both trainers. */
export function maxSamplesFields() {
  return {
    train_max_samples: int(
      -1,
      "Rows of the training files used (verl's key): a seeded random choice when data.shuffle, " +
        "else the first rows, made before tokenising; -1 uses all.",
    ),
    val_max_samples: int(
      -1,
      "Rows of the validation files used, chosen as train_max_samples does; -1 uses all.",
    ),
  };
}

/** verl's `trainer.nnodes` and `trainer.n_gpus_per_node`, accepted at 1, refused otherwise. */
export function deviceCounts() {
  return {
    nnodes: int(1, "Machines (verl's; only 1 here).").unsupported(ONE_GPU_MODEL),
    n_gpus_per_node: int(1, "GPUs per machine (verl's; only 1 here).").unsupported(ONE_GPU_MODEL),
  };
}

/** verl's parallel-size key, accepted at 1 (one GPU holds the model), refused otherwise. */
export function parallelSize(doc: string) {
  return int(1, `${doc} (verl's; only 1 here).`).unsupported(ONE_GPU_MODEL);
}

/**
 * verl's LoRA keys of a model section (actor, critic, SFT), with PEFT's meaning. `what` names
 * what trains besides the adapters (the critic's value head).
 */
export function loraFields(what = "") {
  return {
    lora_rank: int(
      0,
      "LoRA rank; 0 trains all weights. Above 0 the base weights are frozen (stored in f16 " +
        "where the GPU has shader-f16) and only f32 LoRA adapters A [r, in] and B [out, r] " +
        `train${what}.`,
      { min: 0 },
    ),
    lora_alpha: float(
      16,
      "LoRA scaling numerator: a module computes x W^T + (alpha / rank) (x A^T) B^T.",
      {
        min: 0,
      },
    ),
    target_modules: names(
      "all-linear",
      "Linear modules that get adapters: all-linear, a list such as [q_proj, v_proj], or a " +
        "regex over full module names (PEFT's rule).",
    ),
    exclude_modules: names(null, "Modules left without adapters (a list or a regex), as in PEFT."),
    lora_adapter_path: str(
      null,
      "A PEFT adapter folder (adapter_config.json + adapter_model.safetensors) to continue " +
        "from; its r, lora_alpha and target_modules replace the keys above.",
      { isPath: true },
    ),
  };
}

/** Learning-rate schedules. */
export const LR_SCHEDULES = ["constant", "cosine"] as const;

/**
 * AdamW settings and the warmup/decay schedule of one model; `gradClip` is the key that clips
 * its gradient norm (verl's legacy workers read that, not optim.clip_grad).
 */
export function optimSection(lr: number, gradClip: string) {
  return section("AdamW optimizer and learning-rate schedule.", {
    lr: float(lr, "Peak learning rate.", { min: 0 }),
    lr_warmup_steps: int(
      -1,
      "Linear warmup steps; a negative value defers to lr_warmup_steps_ratio.",
    ),
    lr_warmup_steps_ratio: float(
      0.0,
      "Warmup length as a fraction of total_training_steps (used when lr_warmup_steps < 0).",
      { min: 0, max: 1 },
    ),
    lr_scheduler_type: oneOf(LR_SCHEDULES, "constant", "Schedule after warmup."),
    warmup_style: oneOfOrNull(
      LR_SCHEDULES,
      "Deprecated alias of lr_scheduler_type kept for older verl configs; wins when set.",
    ),
    min_lr_ratio: float(0.0, "Cosine schedule floor as a fraction of lr.", { min: 0, max: 1 }),
    num_cycles: float(0.5, "Cosine cycles over the run (0.5 = one half-wave down to the floor)."),
    weight_decay: float(0.01, "Decoupled (AdamW) weight decay.", { min: 0 }),
    betas: floatList([0.9, 0.999], "Adam beta1 and beta2.", { length: 2, min: 0, max: 1 }),
    total_training_steps: int(
      -1,
      "Steps the schedule spans; -1 lets the trainer fill it in from the data and epochs.",
    ),
    optimizer: oneOf(["AdamW"], "AdamW", "The optimizer (verl's key): the built-in WGSL AdamW."),
    optimizer_impl: str("torch.optim", "verl: the module the optimizer comes from.").unsupported(
      "the optimizer is the built-in WGSL AdamW (optimizer: AdamW)",
    ),
    clip_grad: float(1.0, `verl's new engine workers' gradient clip; ${gradClip} clips here.`, {
      min: 0,
    }).unsupported(`${LEGACY_WORKERS}: set ${gradClip}, which clips the gradient norm here`),
    override_optimizer_config: mapOrNull("verl: extra keyword arguments of the optimizer.")
      .unsupported("the built-in AdamW takes lr, betas and weight_decay only"),
  });
}

const ALL_PARTS =
  "checkpoints always hold the model, the optimizer state and extra_state.json, and all are restored";

function checkpointFields() {
  const parts = ["model", "optimizer", "extra", "hf_model"] as const;
  return {
    save_contents: strList(
      ["model", "optimizer", "extra"],
      "Parts written at save_freq: model, optimizer, extra (RNG, loader position), hf_model.",
      { choices: parts },
    ).unsupported(ALL_PARTS),
    load_contents: strList(
      ["model", "optimizer", "extra"],
      "Parts restored on resume.",
      { choices: parts },
    ).unsupported(ALL_PARTS),
  };
}

/** What a checkpoint of one model holds. */
export function checkpointSection() {
  return section("Checkpoint contents.", checkpointFields());
}

/** The PPO trainer's checkpoint section: verl adds async_save there. */
export function ppoCheckpointSection() {
  return section("Checkpoint contents.", {
    ...checkpointFields(),
    async_save: bool(false, "verl: save in the background (its Megatron backend only).")
      .unsupported(
        "checkpoints are written at save_freq before the next step starts (into a temporary " +
          "folder, renamed when complete)",
      ),
  });
}
