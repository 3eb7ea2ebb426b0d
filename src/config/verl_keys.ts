/**
 * verl keys that have no counterpart here, each with what to do instead: a config that carries
 * one (verl's example command lines do) is refused with this reason rather than as an unknown
 * key with a misleading did-you-mean. A rule's `path` matches the key itself or its tail after a
 * dot, so `rollout.gpu_memory_utilization` covers `actor_rollout_ref.rollout.*` and the
 * generation config's `rollout.*`.
 */

const VLLM_ONLY =
  "a setting of verl's vLLM / SGLang rollout engines; the built-in WebGPU engine has none " +
  "(it frees its KV pool after each rollout call and prefills whole prompts): remove it";
const ONE_GPU_MODEL =
  "a model here runs on one GPU per process (sequence and tensor parallelism are not built); " +
  "remove it, and scale rollout out with distributed.backend=nats workers instead";

const RULES: readonly { path: string; why: string }[] = [
  {
    path: "rollout.gpu_memory_utilization",
    why: "WebGPU reports no device memory size to take a fraction of; size the KV pool with " +
      "rollout.kv_cache_tokens (and rollout.max_num_seqs) instead",
  },
  { path: "rollout.tensor_model_parallel_size", why: ONE_GPU_MODEL },
  { path: "rollout.data_parallel_size", why: ONE_GPU_MODEL },
  { path: "rollout.expert_parallel_size", why: ONE_GPU_MODEL },
  { path: "ulysses_sequence_parallel_size", why: ONE_GPU_MODEL },
  { path: "rollout.enforce_eager", why: VLLM_ONLY },
  { path: "rollout.free_cache_engine", why: VLLM_ONLY },
  { path: "rollout.load_format", why: VLLM_ONLY },
  { path: "rollout.enable_chunked_prefill", why: VLLM_ONLY },
  { path: "rollout.max_num_batched_tokens", why: VLLM_ONLY },
  { path: "rollout.disable_log_stats", why: VLLM_ONLY },
  { path: "rollout.engine_kwargs", why: VLLM_ONLY },
  {
    path: "rollout.mode",
    why: "there is one mode here: every request goes through the engine's async API (the " +
      "multi-turn agent loop included); remove it",
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
