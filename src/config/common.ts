/** Sections shared by several schemas (optimizer, checkpoint contents). */
import { ConfigError } from "./errors.ts";
import {
  bool,
  float,
  floatList,
  int,
  names,
  oneOf,
  oneOfOrNull,
  section,
  str,
  strList,
} from "./schema.ts";

/** Why a parallel size other than verl's one-GPU value is refused (one home for the reason). */
export const ONE_GPU_MODEL =
  "a model here runs on one GPU per process (sequence, tensor, data and expert parallelism are " +
  "not built); scale rollout out with distributed.backend=nats workers instead";

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

/** AdamW settings and the warmup/decay schedule of one model. */
export function optimSection(lr: number) {
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
  });
}

/** What a checkpoint of one model holds. */
export function checkpointSection() {
  const parts = ["model", "optimizer", "extra", "hf_model"] as const;
  return section("Checkpoint contents.", {
    save_contents: strList(
      ["model", "optimizer", "extra"],
      "Parts written at save_freq: model, optimizer, extra (RNG, loader position), hf_model.",
      { choices: parts },
    ).unsupported(
      "checkpoints always hold the model, the optimizer state and extra_state.json, and all are restored",
    ),
    load_contents: strList(
      ["model", "optimizer", "extra"],
      "Parts restored on resume.",
      { choices: parts },
    ).unsupported(
      "checkpoints always hold the model, the optimizer state and extra_state.json, and all are restored",
    ),
  });
}

/** verl's names of a dtype (PrecisionType): short and long spellings. */
export const PRECISION_NAMES = ["fp32", "float32", "fp16", "float16", "bf16", "bfloat16"] as const;
export type PrecisionName = typeof PRECISION_NAMES[number];

/**
 * verl's `fsdp_config` of a trained model (the actor's, the critic's): the mixed precision of its
 * passes, and the FSDP keys verl users pass on every command line, accepted at the values that
 * describe one GPU holding everything (`param_offload=False` works, `True` is refused).
 */
export function fsdpConfigSection(role: string) {
  const oneGpu = "WebGPU trains on one GPU that holds the parameters, gradients and optimizer " +
    "state: there is no sharding or CPU offload";
  return section(
    `verl's FSDP settings of the ${role}: its mixed precision (see README "Precision").`,
    {
      param_offload: bool(false, "Offload parameters to the CPU (FSDP).").unsupported(oneGpu),
      optimizer_offload: bool(false, "Offload the optimizer state to the CPU (FSDP).").unsupported(
        oneGpu,
      ),
      fsdp_size: int(-1, "GPUs per FSDP shard group; -1: all (FSDP).").unsupported(oneGpu),
      model_dtype: oneOf(PRECISION_NAMES, "fp32", "Dtype of the master weights.").unsupported(
        "master weights and AdamW moments are f32; mixed_precision.param_dtype picks the compute " +
          "precision",
      ),
      mixed_precision: section("FSDP's MixedPrecision: the dtype passes compute in.", {
        param_dtype: oneOf(
          PRECISION_NAMES,
          "fp32",
          `Compute dtype of the ${role}'s forward and backward passes. fp16 (also bf16, which runs ` +
            "as fp16 with one notice: WebGPU has no bf16) multiplies f16 copies of the linear " +
            "layers' inputs and weights, the LM head's included, with f32 accumulation, keeps f32 " +
            "master weights and AdamW moments, and scales the loss dynamically (torch GradScaler: " +
            "2^16 at start, halved and the step skipped on an inf/NaN gradient, doubled after 2000 " +
            "good steps); attention, norms, RoPE and LoRA-adapted modules stay f32. An adapter " +
            "without shader-f16 runs " +
            "f32 with one notice. Default fp32 (verl's FSDP default is bf16): WebGPU has no bf16 " +
            "and no tensor cores, so f16 is not faster here, and f32 is the exact path.",
        ),
        reduce_dtype: oneOf(PRECISION_NAMES, "fp32", "Dtype of gradient reduction.").unsupported(
          "gradients accumulate in f32 on one GPU (no reduction between GPUs)",
        ),
        buffer_dtype: oneOf(PRECISION_NAMES, "fp32", "Dtype of module buffers.").unsupported(
          "buffers (RoPE tables) stay f32",
        ),
      }),
    },
  );
}
