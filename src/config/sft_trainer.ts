/** The SFT trainer schema (verl's sft_trainer.yaml): masked cross-entropy on responses. */
import {
  checkpointSection,
  checkStrategy,
  deviceCounts,
  loraFields,
  maxSamplesFields,
  parallelSize,
  trainingStrategy,
} from "./common.ts";
import { PRECISION_NAMES, wrapPolicySection } from "./fsdp_engine.ts";
import { verlDataKeys } from "./verl_data_keys.ts";
import { NO_SHARDING } from "./verl_reasons.ts";
import { ConfigError } from "./errors.ts";
import { normalizeSft } from "./legacy_micro.ts";
import { TRUNCATIONS } from "../data/mod.ts";
import {
  bool,
  type ConfigSchema,
  float,
  floatList,
  type Infer,
  int,
  intOrWord,
  map,
  oneOf,
  paths,
  section,
  str,
  strList,
} from "./schema.ts";
import { LOGGERS } from "../tracking/mod.ts";

/** verl's word for "every epoch's last step" in the SFT trainer's save_freq and test_freq. */
export const EPOCH_WORDS = ["after_each_epoch"] as const;

export const sftRoot = section("Supervised fine-tuning.", {
  data: section("Prompt/response pairs.", {
    train_files: paths("data/arithmetic/train.parquet", "Training parquet file or list."),
    val_files: paths("data/arithmetic/val.parquet", "Validation parquet file or list."),
    prompt_key: str("prompt", "Prompt column: a string, or chat messages [{role, content}]."),
    response_key: str(
      "extra_info",
      "Response column: a string, or a struct read through response_dict_keys.",
    ),
    prompt_dict_keys: strList(
      [],
      "Path into a struct prompt column (empty or null, verl's default = use as is).",
    ).orNull(),
    response_dict_keys: strList(
      ["answer"],
      "Path into a struct response column (empty or null = use as is).",
    ).orNull(),
    max_length: int(1024, "Longest prompt + response in tokens.", { min: 2 }),
    truncation: oneOf(TRUNCATIONS, "error", "Overlong samples: error, left, right or middle."),
    train_batch_size: int(256, "Samples per optimizer step.", { min: 1 }),
    micro_batch_size: int(
      null,
      "verl's deprecated global size: on one GPU the same as micro_batch_size_per_gpu, which it " +
        "sets (both set is an error).",
      { min: 1 },
    ),
    micro_batch_size_per_gpu: int(4, "Samples per forward/backward pass.", { min: 1 }),
    ...maxSamplesFields(),
    shuffle: bool(true, "Shuffle every epoch."),
    apply_chat_template_kwargs: map(
      "Variables every chat template render sees, e.g. {enable_thinking: false} for Qwen3; a " +
        "row's enable_thinking_key column wins.",
    ),
    multiturn: section("Whole conversations (with tool calls); loss on assistant turns only.", {
      enable: bool(false, "Rows are conversations in messages_key (prompt/response keys unused)."),
      messages_key: str("messages", "Column of [{role, content, tool_calls?}] messages."),
      tools_key: str("tools", "Column of OpenAI function schemas given to the chat template."),
      enable_thinking_key: str(
        "enable_thinking",
        "Boolean column given to the chat template as enable_thinking (where present).",
      ),
    }),
    seed: int(
      1,
      "Seed of the random row choice of train_max_samples and val_max_samples (trainer.seed orders each epoch).",
    ),
    balance_dp_token: bool(false, "verl: normalise the loss by the tokens of all data ranks.")
      .unsupported("one process trains: the loss is normalised by its own tokens"),
    chat_template: str(null, "verl: a chat template given in the config.").unsupported(
      "verl's SFT trainer refuses it too; the tokenizer folder's chat template is used",
    ),
    ...verlDataKeys(),
  }),
  model: section("The model to fine-tune.", {
    partial_pretrain: str(null, "Hugging Face model folder; null builds the tiny model.", {
      isPath: true,
    }),
    dtype: oneOf(["float32", "float16"], "float32", "Parameter dtype on the GPU.").unsupported(
      "SFT keeps float32 weights",
    ),
    enable_gradient_checkpointing: bool(
      false,
      "Recompute each decoder layer's activations in the backward pass (less GPU memory).",
    ),
    ...loraFields(),
    strategy: trainingStrategy(),
    trust_remote_code: bool(false, "Run a model folder's own Python code; never here.")
      .unsupported(
        "no model code is run here: the folder's architecture must be a built-in family",
      ),
    use_liger: bool(false, "verl: Liger's fused Triton kernels.").unsupported(
      "Liger's kernels are CUDA-only; the LM head and cross-entropy here already run over " +
        "vocabulary chunks without [tokens, vocab] logits",
    ),
    use_shm: bool(false, "verl: load the model through shared memory (/dev/shm).").unsupported(
      "weights load from the folder straight to the GPU; there is no shared-memory staging",
    ),
    fsdp_config: section("verl's FSDP settings, at their one-GPU values.", {
      wrap_policy: wrapPolicySection(),
      model_dtype: oneOf(PRECISION_NAMES, "fp32", "Dtype of the trained weights.").unsupported(
        "SFT trains f32 weights and AdamW moments",
      ),
      cpu_offload: bool(false, "Offload to the CPU (FSDP).").unsupported(NO_SHARDING),
      offload_params: bool(false, "Offload parameters to the CPU (FSDP).").unsupported(
        NO_SHARDING,
      ),
    }),
  }),
  use_remove_padding: bool(
    false,
    "Pack each micro-batch's real tokens (no pads) for the embedding, norms, linear layers and " +
      "the LM head; attention runs padded. The same loss up to f32 rounding, less work on " +
      "ragged batches.",
  ),
  ulysses_sequence_parallel_size: parallelSize("GPUs a sequence is split over"),
  optim: section("AdamW and schedule.", {
    lr: float(1e-5, "Peak learning rate.", { min: 0 }),
    betas: floatList([0.9, 0.95], "Adam beta1 and beta2.", { length: 2, min: 0, max: 1 }),
    weight_decay: float(0.01, "Decoupled weight decay.", { min: 0 }),
    warmup_steps_ratio: float(0.1, "Warmup as a fraction of all steps.", { min: 0, max: 1 }),
    lr_warmup_steps_ratio: float(
      null,
      "verl's newer name of warmup_steps_ratio; wins when set.",
      { min: 0, max: 1 },
    ),
    clip_grad: float(1.0, "Clip the global gradient norm.", { min: 0 }),
    lr_scheduler: oneOf(["constant", "cosine"], "cosine", "Schedule after warmup."),
  }),
  trainer: section("Run control.", {
    default_local_dir: str(
      "checkpoints/${trainer.project_name}/${trainer.experiment_name}",
      "Checkpoint root.",
    ),
    resume_mode: oneOf(
      ["auto", "disable", "resume_path"],
      "auto",
      "auto: the latest checkpoint in default_local_dir if any (or resume_from_path when set, as " +
        "verl's SFT trainer does), else a fresh start; disable: always fresh; resume_path: " +
        "resume_from_path.",
    ),
    resume_from_path: str(
      null,
      "global_step_N folder to resume from (resume_mode=resume_path, or auto).",
    ),
    resume_allowed_changes: strList(
      [],
      "Keys that change the model, the trained weights or the data order (partial_pretrain, " +
        "lora_*, data files, lengths, batch size, shuffle, seeds) yet may differ from the " +
        "resumed checkpoint's saved config; without this such a difference is an error. Other " +
        "differences are printed as warnings.",
    ),
    project_name: str("webrl_sft", "Project name."),
    experiment_name: str("arithmetic", "Run name."),
    total_epochs: int(4, "Passes over the training set.", { min: 1 }),
    total_training_steps: int(null, "Stop after this many steps; null = total_epochs.", {
      min: 1,
    }),
    logger: strList(["console"], "Metric sinks: console, file, tensorboard.", {
      choices: LOGGERS,
    }),
    seed: int(1, "Seed of model init and shuffles."),
    save_freq: intOrWord(
      -1,
      EPOCH_WORDS,
      "Checkpoint every N steps (at least 1), or after_each_epoch; -1 = end only.",
      { min: -1 },
    ),
    test_freq: intOrWord(
      -1,
      EPOCH_WORDS,
      "Validate every N steps (at least 1), or after_each_epoch; -1 = end only.",
      { min: -1 },
    ),
    max_ckpt_to_keep: int(null, "Keep only the newest N checkpoints.", { min: 1 }),
    ...deviceCounts(),
    device: oneOf(["webgpu", "cpu"], "webgpu", "webgpu or the CPU reference path."),
    checkpoint: checkpointSection(),
  }),
});

export type SftConfig = Infer<typeof sftRoot>;

export const sftTrainerSchema: ConfigSchema<typeof sftRoot> = {
  name: "sft_trainer",
  title: "SFT trainer config (deno task sft): masked cross-entropy on responses.",
  root: sftRoot,
  normalize: (cfg) => normalizeSft(cfg, sftRoot),
  conditionalPaths: [{
    key: "trainer.resume_from_path",
    when: (c) => c.trainer.resume_mode !== "disable",
  }],
  check: (cfg) => {
    checkStrategy("model.strategy", cfg.model.strategy);
    if (cfg.trainer.resume_mode === "resume_path" && cfg.trainer.resume_from_path === null) {
      throw new ConfigError(
        "trainer.resume_from_path",
        "trainer.resume_mode=resume_path needs trainer.resume_from_path",
      );
    }
    for (const key of ["save_freq", "test_freq"] as const) {
      if (cfg.trainer[key] === 0) {
        throw new ConfigError(
          `trainer.${key}`,
          `trainer.${key}=0 names no step (verl divides by it): use a step count of at least 1, ` +
            `after_each_epoch, or -1 for the end only`,
        );
      }
    }
    const { train_batch_size: b, micro_batch_size_per_gpu: m } = cfg.data;
    if (m > b) {
      throw new ConfigError(
        "data.micro_batch_size_per_gpu",
        `data.micro_batch_size_per_gpu=${m} is larger than data.train_batch_size=${b}`,
      );
    }
    if (b % m !== 0) {
      throw new ConfigError(
        "data.micro_batch_size_per_gpu",
        `data.train_batch_size=${b} is not divisible by data.micro_batch_size_per_gpu=${m}`,
      );
    }
  },
};
