/** `reward_model.*`, `reward_manager.*` and `custom_reward_function.*`: how samples are scored. */
import { anything, bool, type Field, float, int, map, oneOf, ref, section, str } from "./schema.ts";
import { NO_PYTHON_CLASSES, NO_REWARD_MODEL } from "./verl_reasons.ts";

const RM = "reward_model.enable";
/** A key of verl's reward model, inert while reward_model.enable is off (always, here). */
const off = <T>(f: Field<T>) => f.inertWhile(RM);

/** verl's reward-model worker: its model folder and FSDP settings. */
const rewardModelModel = section("verl's reward model (reward_model.enable).", {
  input_tokenizer: off(
    str(ref("actor_rollout_ref.model.path"), "The policy's tokenizer.").orNull(),
  ),
  path: off(str("~/models/FsfairX-LLaMA3-RM-v0.1", "Reward model folder.")),
  trust_remote_code: off(bool(false, "Run the folder's own Python code.")),
  override_config: off(map("Entries replacing the model's config.json.")),
  use_shm: off(bool(false, "Load through shared memory.")),
  use_remove_padding: off(bool(false, "Pack the real tokens.")),
  fsdp_config: section("FSDP settings of the reward model.", {
    wrap_policy: section("FSDP's auto-wrap policy.", {
      min_num_params: off(int(0, "Parameters a module needs to be wrapped.")),
    }),
    param_offload: off(bool(false, "Offload parameters to the CPU.")),
    reshard_after_forward: off(bool(true, "Free gathered parameters after the forward.")),
    fsdp_size: off(int(-1, "GPUs per shard group.")),
    forward_prefetch: off(bool(false, "Prefetch the next all-gather.")),
  }),
});

/** verl's generative reward model's rollout engine. */
const rewardModelRollout = section("verl's reward-model rollout (reward_model.enable).", {
  name: off(str(null, "Engine name (vllm, sglang).")),
  dtype: off(str("bfloat16", "Engine dtype.")),
  gpu_memory_utilization: off(float(0.5, "Share of GPU memory.")),
  enforce_eager: off(bool(true, "Disable CUDA graphs.")),
  cudagraph_capture_sizes: off(anything(null, "CUDA-graph batch sizes.")),
  free_cache_engine: off(bool(true, "Free the KV cache after each call.")),
  data_parallel_size: off(int(1, "Data-parallel replicas.")),
  expert_parallel_size: off(int(1, "GPUs per expert group.")),
  tensor_model_parallel_size: off(int(2, "GPUs per model.")),
  max_num_batched_tokens: off(int(8192, "Tokens per engine step.")),
  max_model_len: off(int(null, "Longest context.")),
  max_num_seqs: off(int(1024, "Sequences in flight.")),
  load_format: off(str("auto", "Weight loading format.")),
  engine_kwargs: off(map("Extra engine arguments.")),
  limit_images: off(anything(null, "Images per prompt.")),
  enable_chunked_prefill: off(bool(true, "Chunked prefill.")),
  enable_prefix_caching: off(bool(true, "Prefix caching.")),
  disable_log_stats: off(bool(true, "Engine statistics off.")),
  skip_tokenizer_init: off(bool(false, "Token ids in and out.")),
  prompt_length: off(int(2048, "Prompt tokens.")),
  response_length: off(int(2048, "Response tokens.")),
});

const LOOP_SOURCE = "reward_model.reward_loop_source";
const POOL = "reward_model.enable_resource_pool";
const SANDBOX = "reward_model.sandbox_fusion.url";

export const ppoRewardModel = section("Reward computation.", {
  enable: bool(false, "Score with a reward model (verl); here only rule-based rewards exist.")
    .unsupported(NO_REWARD_MODEL),
  enable_resource_pool: bool(false, "verl: give the reward model a GPU pool of its own.")
    .unsupported("there is no Ray resource pool: the trainer's one process runs every stage"),
  n_gpus_per_node: int(8, "GPUs per node of the reward pool.").inertWhile(POOL),
  nnodes: int(0, "Nodes of the reward pool.").inertWhile(POOL),
  strategy: off(str("fsdp", "The reward model's training backend.")),
  model: rewardModelModel,
  micro_batch_size: off(int(null, "verl's deprecated global micro-batch size.")),
  micro_batch_size_per_gpu: off(int(null, "Samples per reward-model forward pass.")),
  max_length: off(int(null, "Longest input of the reward model.")),
  use_dynamic_bsz: off(bool(ref("critic.use_dynamic_bsz"), "Split passes by token budget.")),
  forward_max_token_len_per_gpu: off(
    int(ref("critic.forward_max_token_len_per_gpu"), "Tokens per forward pass."),
  ),
  ulysses_sequence_parallel_size: off(int(1, "GPUs a sequence is split over.")),
  reward_manager: oneOf(
    ["naive", "dapo"],
    "naive",
    "naive: call compute_score once per sample and put the score on its last token; dapo: " +
      "the same, plus a plain number's score as the acc column of reward_extra_info and the " +
      "overlong_buffer penalty. reward_manager.name is verl's newer home of this key.",
  ),
  reward_loop_source: oneOf(
    ["register", "importlib"],
    "register",
    "Where verl's reward loop " +
      "manager class comes from: its registry (reward_manager), or reward_loop_module_path.",
  )
    .unsupported(NO_PYTHON_CLASSES),
  reward_loop_module_path: str(null, "Module of a custom reward loop manager.")
    .inertWhile(LOOP_SOURCE),
  reward_loop_class_name: str(null, "Class of a custom reward loop manager.")
    .inertWhile(LOOP_SOURCE),
  launch_reward_fn_async: bool(false, "verl: score in a Ray task beside the old-log-prob pass.")
    .unsupported("the reward stage scores each batch before the old-log-prob pass"),
  sandbox_fusion: section("verl's Sandbox Fusion code-execution service for code rewards.", {
    url: str(null, "The service's URL; null: off.").unsupported(
      "Sandbox Fusion is not called here; score code in custom_reward_function.path",
    ),
    max_concurrent: int(64, "Requests in flight.").inertWhile(SANDBOX),
    memory_limit_mb: int(1024, "Memory limit of a run.").inertWhile(SANDBOX),
  }),
  use_reward_loop: bool(true, "verl: score in its reward loop (true, its default).").unsupported(
    "rewards are scored in the trainer's reward stage; there is no second path to choose",
  ),
  num_workers: int(1, "verl: reward-loop worker processes.").unsupported(
    "the built-in scorers run in the trainer's process and custom_reward_function in one " +
      "sandboxed worker",
  ),
  rollout: rewardModelRollout,
  overlong_buffer: section("DAPO's soft penalty for responses near max_response_length.", {
    enable: bool(false, "Penalise long responses (needs reward_manager=dapo)."),
    len: int(0, "Tokens before data.max_response_length over which the penalty grows.", {
      min: 0,
    }),
    penalty_factor: float(0.0, "Penalty at data.max_response_length (linear from 0).", {
      min: 0,
    }),
    log: bool(
      false,
      "Add overlong_reward and overlong to reward_extra_info and log their means.",
    ),
  }),
});

const SOURCE = "reward_manager.source";

/** verl's newer home of the reward manager's choice. */
export const ppoRewardManager = section("The reward manager (verl's newer section).", {
  source: oneOf(["register", "importlib"], "register", "Where the manager class comes from.")
    .unsupported(NO_PYTHON_CLASSES),
  name: oneOf(
    ["naive", "dapo"],
    ref("reward_model.reward_manager"),
    "The reward manager, as reward_model.reward_manager (which it sets; both set to different " +
      "managers is an error).",
  ),
  module: section("A custom manager's module (source: importlib).", {
    path: str(null, "Module path.").inertWhile(SOURCE),
    name: str("custom_reward_manager", "Class name.").inertWhile(SOURCE),
  }),
});

export const ppoCustomReward = section("A user reward function run in a sandboxed worker.", {
  path: str(null, "TS/JS module exporting the function; null uses the built-in scorers.", {
    isPath: true,
  }),
  name: str("compute_score", "Exported function name."),
  reward_kwargs: map("Extra options passed to the function as a fifth argument."),
  timeout_s: float(10, "Per-sample time limit; a call over it is counted in reward/timeouts.", {
    min: 0,
  }),
  batch_timeout_s: float(
    null,
    "Time budget of one scoring call (a training step's batch, a validation batch, all of " +
      "deno task eval); when it runs out the running sample counts in reward/timeouts and the " +
      "unscored rest in reward/skipped. null = no budget (a function that hangs on every sample " +
      "then costs samples x timeout_s).",
    { min: 0 },
  ),
});
