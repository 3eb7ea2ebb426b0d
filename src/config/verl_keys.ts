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
import { ONE_GPU_MODEL } from "./common.ts";

const AGENT_WORKERS = "verl's agent-loop worker processes (Ray); here every conversation runs " +
  "concurrently in the trainer's process over the engine's async API: remove it";

const RULES: readonly { path: string; why: string }[] = [
  {
    path: "rollout.gpu_memory_utilization",
    why: "WebGPU reports no device memory size to take a fraction of; size the KV pool with " +
      "rollout.kv_cache_tokens (and rollout.max_num_seqs) instead",
  },
  { path: "ulysses_sequence_parallel_size", why: `${ONE_GPU_MODEL}; remove it` },
  { path: "rollout.enforce_eager", why: VLLM_ONLY },
  { path: "rollout.load_format", why: VLLM_ONLY },
  { path: "rollout.enable_chunked_prefill", why: VLLM_ONLY },
  { path: "rollout.max_num_batched_tokens", why: VLLM_ONLY },
  { path: "rollout.disable_log_stats", why: VLLM_ONLY },
  { path: "rollout.engine_kwargs", why: VLLM_ONLY },
  { path: "rollout.agent", why: AGENT_WORKERS },
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
