/**
 * verl keys that have no counterpart here, each with what to do instead: a config that carries
 * one (verl's example command lines do) is refused with this reason rather than as an unknown
 * key with a misleading did-you-mean. A rule's `path` matches the key itself or its tail after a
 * dot, so `rollout.gpu_memory_utilization` covers `actor_rollout_ref.rollout.*` and the
 * generation config's `rollout.*`.
 */

import { NO_TORCH_KERNELS, NO_VISION as VISION, ONE_GPU_MODEL, VLLM_ONLY } from "./verl_reasons.ts";

const NO_VISION = `${VISION}: remove it`;
const FOR_REWARD_MODEL =
  "it feeds verl's model-based reward with its own tokenizer; rewards here " +
  "are rule-based functions of the decoded text: remove it";
const AGENT_WORKERS = "verl's agent-loop worker processes (Ray); here every conversation runs " +
  "concurrently in the trainer's process over the engine's async API: remove it";

const RULES: readonly { path: string; why: string }[] = [
  {
    path: "rollout.gpu_memory_utilization",
    why: "WebGPU reports no device memory size to take a fraction of; size the KV pool with " +
      "rollout.kv_cache_tokens (and rollout.max_num_seqs) instead",
  },
  { path: "ulysses_sequence_parallel_size", why: `${ONE_GPU_MODEL}; remove it` },
  ...[
    "enforce_eager",
    "load_format",
    "enable_chunked_prefill",
    "max_num_batched_tokens",
    "disable_log_stats",
    "engine_kwargs",
    "skip_tokenizer_init",
    "max_model_len",
    "cudagraph_capture_sizes",
    "multi_stage_wake_up",
    "update_weights_bucket_megabytes",
  ].map((key) => ({ path: `rollout.${key}`, why: VLLM_ONLY })),
  {
    path: "rollout.seed",
    why: "the rollout's sampling is seeded from trainer.seed (a stream per step): set that instead",
  },
  { path: "rollout.agent", why: AGENT_WORKERS },
  ...[
    "model.use_liger",
    "use_fused_kernels",
    "fused_kernel_options",
    "use_torch_compile",
    "entropy_from_logits_with_chunking",
    "entropy_checkpointing",
    "sum_pi_squared_checkpointing",
  ].map((path) => ({ path, why: NO_TORCH_KERNELS })),
  {
    path: "model.external_lib",
    why: "it imports a Python module that registers model code; the model families here are " +
      "built in (see README): remove it",
  },
  {
    path: "critic.model.tokenizer_path",
    why: "the critic reads the prompts the actor's tokenizer made: remove it",
  },
  {
    path: "trainer.balance_batch",
    why:
      "it balances sequence lengths across data-parallel ranks; one process trains here: remove it",
  },
  {
    path: "data.dataloader_num_workers",
    why: "the parquet files are read once, in the trainer's process: remove it",
  },
  ...["data.image_key", "data.video_key"].map((path) => ({ path, why: NO_VISION })),
  ...["data.return_raw_input_ids", "data.return_full_prompt"].map((path) => ({
    path,
    why: FOR_REWARD_MODEL,
  })),
  {
    path: "trainer.resume_path",
    why: "an older verl SFT trainer's name of trainer.resume_from_path (both trainers' name " +
      "here and in verl now): remove it, or set trainer.resume_mode=resume_path and " +
      "trainer.resume_from_path to the global_step_N folder",
  },
  ...["trainer.default_hdfs_dir", "trainer.del_local_ckpt_after_load"].map((path) => ({
    path,
    why: "checkpoints live in trainer.default_local_dir only (no HDFS copy): remove it",
  })),
  ...["ray_kwargs", "trainer.ray_wait_register_center_timeout", "nccl_timeout"].map((path) => ({
    path,
    why: "there is no Ray or NCCL here (one process; distributed.backend=nats scales rollout " +
      "out): remove it",
  })),
  ...[
    "global_profiler",
    "actor.profiler",
    "ref.profiler",
    "rollout.profiler",
    "critic.profiler",
    "reward_model.profiler",
  ]
    .map((path) => ({
      path,
      why: "verl's torch / Nsight profilers do not exist here; GPU timings per kernel come from " +
        "the bench scripts (bench/README.md): remove it",
    })),
  {
    path: "rollout.trace",
    why: "verl's rollout tracing (weave / mlflow) is not built; the trainer's dumps " +
      "(trainer.rollout_data_dir) hold every generation: remove it",
  },
];

/** Why verl's `key` is not taken here, or undefined when it is no verl key we know of. */
export function verlKeyReason(key: string): string | undefined {
  const hit = RULES.find((r) =>
    key === r.path || key.endsWith(`.${r.path}`) || key.includes(`.${r.path}.`) ||
    key.startsWith(`${r.path}.`)
  );
  return hit?.why;
}
