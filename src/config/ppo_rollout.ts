/** `actor_rollout_ref.rollout.*`: sampling settings of the generation engine. */
import { legacyMicroBatch, NULL_MICRO } from "./legacy_micro.ts";
import { ENGINE_BLOCK_SIZE } from "../rollout/mod.ts";
import { ConfigError } from "./errors.ts";
import { rolloutEngineName } from "./common.ts";
import { bool, float, int, oneOf, ref, section } from "./schema.ts";
import { multiTurn, verlEngineKeys, verlTrainerRolloutKeys } from "./rollout_verl_keys.ts";

const valKwargs = section("Sampling settings used during validation.", {
  temperature: float(0, "Validation temperature (0 = greedy, whatever do_sample says).", {
    min: 0,
  }),
  top_k: int(-1, "Validation top-k (-1 or 0 = off)."),
  top_p: float(1.0, "Validation nucleus threshold.", { min: 0, max: 1 }),
  do_sample: bool(false, "Sample during validation; false decodes greedily."),
  n: int(1, "Responses per validation prompt (reported as mean@n).", { min: 1 }),
});

/** `rollout.dtype` values; bfloat16 (verl's default) runs as float16: WebGPU has no bfloat16. */
export const ROLLOUT_DTYPES = ["float32", "float16", "bfloat16"] as const;
export type RolloutDtype = typeof ROLLOUT_DTYPES[number];

const ROLLOUT_DTYPE_DOC = "What the rollout decodes with: float16 is an f16 KV cache, and a " +
  "per-rollout f16 copy of the weight matrices and lm_head where the GPU has shader-f16 (else " +
  "f32 weights, with a notice); float32 is an f32 KV cache and the actor's own weights (a LoRA " +
  "actor's frozen base is f16 where the GPU has shader-f16). bfloat16 (verl's default) runs as " +
  "float16 with one notice: WebGPU has no bfloat16.";

/** `rollout.max_num_seqs` by default (verl's). */
export const ENGINE_MAX_NUM_SEQS = 1024;

/**
 * The engine's pool keys, `max_num_seqs`, `kv_cache_tokens` and `enable_prefix_caching`, shared by the trainer's and the
 * generator's rollout; `batch` names what one rollout call holds (e.g. "batch_size * n_samples").
 */
export function enginePoolKeys(batch: string) {
  return {
    max_num_seqs: int(
      ENGINE_MAX_NUM_SEQS,
      "Sequences decoded together by the engine: a finished one's slot goes to the next " +
        "waiting response at once (a multi-turn conversation's turn is one request).",
      { min: 1 },
    ),
    kv_cache_tokens: int(
      null,
      `KV cache positions shared by the sequences in flight (blocks of ${ENGINE_BLOCK_SIZE}); ` +
        `null holds min(max_num_seqs, ${batch}) sequences of the longest prompt plus ` +
        "response_length. Fewer: when it fills, the newest sequence is preempted and recomputed.",
      { min: 1 },
    ),
    enable_prefix_caching: bool(
      true,
      "Automatic prefix caching (vLLM's): full KV blocks of earlier prompts and responses stay " +
        "cached while the pool has room, and a request starting with the same tokens (a later " +
        "turn of a conversation, a repeated prompt) prefills only the rest; false recomputes " +
        "every prompt.",
    ),
  };
}

/**
 * The rollout engine's settings of a `rollout.*` section: its pool sizes and prefix caching.
 * The trainer's rollout, the generator and (through the run info) the rollout workers read them.
 */
export interface EngineSettings {
  /** rollout.max_num_seqs */
  maxNumSeqs: number;
  /** rollout.kv_cache_tokens; null: room for every sequence at its longest. */
  kvCacheTokens: number | null;
  /** rollout.enable_prefix_caching */
  prefixCaching: boolean;
}

/** `r`'s engine settings. */
export function engineSettings(
  r: { max_num_seqs: number; kv_cache_tokens: number | null; enable_prefix_caching: boolean },
): EngineSettings {
  return {
    maxNumSeqs: r.max_num_seqs,
    kvCacheTokens: r.kv_cache_tokens,
    prefixCaching: r.enable_prefix_caching,
  };
}

/**
 * The pool part of an engine's options for `sequences` of up to `longest` positions under `s`
 * (blocks by enginePoolBlocks; `key` names kv_cache_tokens in errors).
 */
export function enginePoolOptions(
  s: EngineSettings & { key: string },
  need: { sequences: number; longest: number },
): { maxSeqs: number; blockSize: number; numBlocks: number; prefixCaching: boolean } {
  return {
    maxSeqs: s.maxNumSeqs,
    blockSize: ENGINE_BLOCK_SIZE,
    numBlocks: enginePoolBlocks({ ...s, ...need }),
    prefixCaching: s.prefixCaching,
  };
}

/**
 * Blocks of the engine's pool: `kv_cache_tokens` (at `key`), or by default `sequences` (capped
 * by max_num_seqs) at their longest, `longest` positions each (prompt plus response budget).
 * A budget that cannot hold one such sequence is an error naming the key.
 */
export function enginePoolBlocks(o: {
  maxNumSeqs: number;
  kvCacheTokens: number | null;
  sequences: number;
  longest: number;
  key: string;
}): number {
  const per = Math.ceil(o.longest / ENGINE_BLOCK_SIZE);
  if (o.kvCacheTokens === null) return Math.min(o.maxNumSeqs, o.sequences) * per;
  const blocks = Math.ceil(o.kvCacheTokens / ENGINE_BLOCK_SIZE);
  if (blocks >= per) return blocks;
  throw new ConfigError(
    o.key,
    `${o.key}=${o.kvCacheTokens} cannot hold one sequence: the longest prompt plus ` +
      `response_length is ${o.longest} positions; raise it to at least ${o.longest} (or null)`,
  );
}

export const ppoRollout = section("Generation engine and sampling.", {
  name: rolloutEngineName("Rollout engine (KV-cache decoding in WGSL)."),
  ...verlEngineKeys(),
  dtype: oneOf(ROLLOUT_DTYPES, "float32", ROLLOUT_DTYPE_DOC),
  temperature: float(
    1.0,
    "Sampling temperature; 0 decodes greedily (argmax), as in vLLM. Log-probs use 1 then.",
    { min: 0 },
  ),
  top_k: int(-1, "Keep the k likeliest tokens (-1 or 0 = off)."),
  top_p: float(1.0, "Nucleus sampling threshold.", { min: 0, max: 1 }),
  do_sample: bool(true, "Sample; false decodes greedily."),
  n: int(1, "Responses per prompt (> 1 for GRPO and other group estimators).", { min: 1 }),
  prompt_length: int(ref("data.max_prompt_length"), "Prompt tokens the engine accepts.", {
    min: 1,
  }),
  response_length: int(ref("data.max_response_length"), "Most tokens generated per response.", {
    min: 1,
  }),
  ignore_eos: bool(false, "Keep generating after EOS (for benchmarks)."),
  ...enginePoolKeys("data.gen_batch_size * n"),
  log_prob_micro_batch_size: legacyMicroBatch("log_prob_micro_batch_size_per_gpu"),
  log_prob_micro_batch_size_per_gpu: int(
    16,
    "Samples per forward pass when recomputing old log-probs;" + NULL_MICRO,
    { min: 1 },
  ).orNull(),
  log_prob_use_dynamic_bsz: bool(
    ref("actor_rollout_ref.actor.use_dynamic_bsz"),
    "Split the old log-prob passes by token budget (log_prob_max_token_len_per_gpu).",
  ),
  log_prob_max_token_len_per_gpu: int(
    ref("actor_rollout_ref.actor.ppo_max_token_len_per_gpu"),
    "log_prob_use_dynamic_bsz: most tokens per old log-prob forward pass.",
    { min: 1 },
  ),
  calculate_log_probs: bool(
    false,
    "Keep the sampler's log-probs of the chosen tokens (for debugging the recomputed ones).",
  ),
  multi_turn: multiTurn,
  val_kwargs: valKwargs,
  ...verlTrainerRolloutKeys(),
});
