/** `actor_rollout_ref.rollout.*`: sampling settings of the generation engine. */
import { legacyMicroBatch } from "./legacy_micro.ts";
import {
  ENGINE_BLOCK_SIZE,
  SANITY_CHECK_MODES,
  TOOL_FORMATS,
  TRUNCATE_SIDES,
} from "../rollout/mod.ts";
import { ConfigError } from "./errors.ts";
import { parallelSize, rolloutEngineName } from "./common.ts";
import { bool, float, int, oneOf, ref, section, str } from "./schema.ts";

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

const NO_REPEAT_ROLLOUTS = "it is read only by verl's CollabLLM recipe (sampling future " +
  "conversations for its LLM-judge reward manager), which is not available here";

/** `multi_turn.*`: the agent loop (shared by the trainer and the generator). */
export const multiTurn = section(
  "Multi-turn agent loop (verl's tool agent): tools and interactions from YAML files.",
  {
    enable: bool(
      false,
      "Run the tool-calling agent loop for every prompt (rows with agent_name: tool_agent run it anyway).",
    ),
    max_assistant_turns: int(null, "Most assistant turns per sample; null = until the budget.", {
      min: 1,
    }),
    tool_config_path: str(null, "verl's tool YAML (tools: [{class_name, config, tool_schema}]).", {
      isPath: true,
    }),
    max_user_turns: int(null, "Most tool and user replies per sample; null = until the budget.", {
      min: 1,
    }),
    max_parallel_calls: int(1, "Most tool calls run per assistant turn (the first ones).", {
      min: 1,
    }),
    max_tool_response_length: int(256, "Characters of a tool reply kept (then truncated).", {
      min: 1,
    }),
    tool_response_truncate_side: oneOf(
      TRUNCATE_SIDES,
      "middle",
      "Part of a long tool reply kept: left (its start), right (its end), middle (both ends).",
    ),
    interaction_config_path: str(
      null,
      "verl's interaction YAML (interaction: [{name, class_name, config}]): a simulated user " +
        "answers each assistant turn without a tool call; rows pick one by interaction_kwargs.name.",
      { isPath: true },
    ),
    use_inference_chat_template: bool(
      false,
      "Prompt each turn with the template's render instead of the recorded tokens.",
    ).unsupported("each turn continues from the recorded tokens (verl's default)"),
    tokenization_sanity_check_mode: oneOf(
      SANITY_CHECK_MODES,
      "strict",
      "Compare the turn-by-turn tokens with one render of the conversation: strict (any " +
        "difference is an error), ignore_strippable (whitespace differences pass), disable.",
    ),
    format: oneOf(
      TOOL_FORMATS,
      "hermes",
      "Tool-call format: hermes (<tool_call> JSON) or llama3_json.",
    ),
    num_repeat_rollouts: int(null, "Repeats of each interaction rollout.", { min: 1 })
      .unsupported(NO_REPEAT_ROLLOUTS),
  },
);

/**
 * verl's rollout-engine keys that describe this engine at one value (verl command lines carry
 * them): accepted there, refused otherwise with the reason. Shared by the trainer's and the
 * generation config's rollout sections.
 */
export function verlEngineKeys() {
  return {
    mode: oneOf(
      ["async", "sync"],
      "async",
      "verl's rollout mode: async, every request through the engine's async API (the agent loop's " +
        "turns and single-turn batches alike).",
    ).unsupported(
      "the engine serves every request through its async API (verl's async mode); the batch-at-" +
        "once sync mode is not built",
    ),
    tensor_model_parallel_size: parallelSize("GPUs per rollout model"),
    data_parallel_size: parallelSize("Rollout data-parallel replicas per model"),
    expert_parallel_size: parallelSize("GPUs per expert group"),
    free_cache_engine: bool(true, "Free the KV pool after each rollout call (verl's vLLM key).")
      .unsupported("the engine frees its KV pool after every rollout call, always"),
    layered_summon: bool(
      false,
      "verl's layer-by-layer LoRA weight sync from FSDP to vLLM; here a LoRA rollout merges the " +
        "adapters into a copy on the GPU.",
    ).unsupported("there is no FSDP-to-vLLM weight sync: LoRA rollouts merge on the GPU"),
  };
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
    "Samples per forward pass when recomputing old log-probs.",
    { min: 1 },
  ),
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
});
