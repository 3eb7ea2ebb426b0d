/**
 * Why verl settings are not taken here, one home per reason: the schema's refused values
 * (`.unsupported(why)`) and verl_keys.ts's refused names share these texts.
 */

/** Why a parallel size other than verl's one-GPU value is refused. */
export const ONE_GPU_MODEL =
  "a model here runs on one GPU per process (sequence, tensor, data and expert parallelism are " +
  "not built); scale rollout out with distributed.backend=nats workers instead";

/** FSDP's sharding, wrapping and offload settings. */
export const NO_SHARDING = "WebGPU trains on one GPU that holds the parameters, gradients and " +
  "optimizer state: there is no sharding, layer wrapping or CPU offload";

/** vLLM / SGLang engine settings. */
export const VLLM_ONLY =
  "a setting of verl's vLLM / SGLang rollout engines; the built-in WebGPU engine has none " +
  "(it frees its KV pool after each rollout call and prefills whole prompts): remove it";

/** PyTorch kernel switches. */
export const NO_TORCH_KERNELS = "a switch of verl's PyTorch kernels (Liger, Triton, " +
  "torch.compile); here the LM head, log-probs and entropy always run fused over vocabulary " +
  "chunks in WGSL: remove it";

/** Image and video inputs. */
export const NO_VISION = "only text decoders are built here (no image or video inputs)";

/** MoE routing and multi-token prediction: the built-in families have neither. */
export const DENSE_MODELS = "the built-in model families are dense decoders with one output " +
  "head (no MoE router to record or replay, no multi-token-prediction layers)";

/** A model-based reward. */
export const NO_REWARD_MODEL = "model-based rewards are not supported: rewards come from the " +
  "built-in scorers or custom_reward_function.path, scored in the trainer";

/** Python classes loaded by module path. */
export const NO_PYTHON_CLASSES = "verl loads a Python class from a module path here; no Python " +
  "runs in this trainer: rows follow verl's parquet schema (convert with deno task data), " +
  "rewards come from custom_reward_function.path";

/** Keys read only by verl's new engine workers (trainer.use_legacy_worker_impl=disable). */
export const LEGACY_WORKERS = "verl reads it only in its new engine workers " +
  "(trainer.use_legacy_worker_impl=disable), not in its default workers, which this trainer follows";

/** verl's seed of the mini-batch shuffle (data_loader_seed of the actor and the critic). */
export const DATA_LOADER_SEED =
  `${LEGACY_WORKERS}; the mini-batch shuffle here is seeded from trainer.seed`;

/** Activation offload and tiled MLPs: memory savers of verl's PyTorch models. */
export const NO_ACTIVATION_TRICKS = "activations stay on the GPU and the MLP runs whole; " +
  "enable_gradient_checkpointing is the memory saver here";
