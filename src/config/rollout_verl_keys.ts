/**
 * The rollout keys shared by the trainer's and the generator's `rollout.*` (the multi-turn agent
 * loop, verl's engine keys at the values that describe this engine), and the trainer's further
 * verl rollout keys.
 */
import { SANITY_CHECK_MODES, TOOL_FORMATS, TRUNCATE_SIDES } from "../rollout/mod.ts";
import { parallelSize } from "./common.ts";
import { bool, float, int, map, mapOf, oneOf, ref, section, str } from "./schema.ts";
import { DENSE_MODELS } from "./verl_reasons.ts";

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
    pipeline_model_parallel_size: parallelSize("GPUs a rollout model's layers are split over"),
    free_cache_engine: bool(true, "Free the KV pool after each rollout call (verl's vLLM key).")
      .unsupported("the engine frees its KV pool after every rollout call, always"),
    layered_summon: bool(
      false,
      "verl's layer-by-layer LoRA weight sync from FSDP to vLLM; here a LoRA rollout merges the " +
        "adapters into a copy on the GPU.",
    ).unsupported("there is no FSDP-to-vLLM weight sync: LoRA rollouts merge on the GPU"),
    scheduling_policy: oneOf(["fcfs", "priority"], "fcfs", "vLLM's request scheduling.")
      .unsupported(
        "the engine admits waiting requests first come, first served, and preempts the newest " +
          "when the KV pool fills (vLLM's fcfs)",
      ),
  };
}

const WEIGHTS_SHARED = "the rollout decodes with the actor's weights in the trainer's process " +
  "(verl's colocated naive backend); remote workers get them through distributed.backend=nats";
const SKIP = "actor_rollout_ref.rollout.skip_rollout";
const PROMETHEUS = "actor_rollout_ref.rollout.prometheus.enable";

/** verl's further keys of the trainer's rollout, each accepted at the value describing this one. */
export function verlTrainerRolloutKeys() {
  return {
    logprobs_mode: oneOf(
      ["processed_logprobs", "raw_logprobs", "processed_logits", "raw_logits"],
      "processed_logprobs",
      "What calculate_log_probs returns: log_softmax(logits / temperature) at the chosen token " +
        "over the whole vocabulary, the actor's log-prob (vLLM's processed_logprobs when top-k " +
        "and top-p are off).",
    ).unsupported("the engine returns the tempered log-probs only"),
    over_sample_rate: float(0, "verl: abort the last share of a rollout's requests.").unsupported(
      "every request of a rollout runs to its end",
    ),
    checkpoint_engine: section("verl's weight transfer from the trainer to the rollout.", {
      backend: oneOf(["naive", "nccl", "nixl", "hccl"], "naive", "Transfer backend.")
        .unsupported(WEIGHTS_SHARED),
      update_weights_bucket_megabytes: int(2048, "Transfer bucket size.").unsupported(
        WEIGHTS_SHARED,
      ),
      engine_kwargs: map("Backend arguments.").unsupported(WEIGHTS_SHARED),
    }),
    skip_rollout: bool(false, "verl: load rollouts dumped by an earlier run instead.").unsupported(
      "every step generates its rollouts (trainer.rollout_data_dir dumps them, for reading only)",
    ),
    skip_dump_dir: str("/tmp/rollout_dump", "verl: where skip_rollout's dumps live.")
      .inertWhile(SKIP),
    enable_rollout_routing_replay: bool(false, "verl: record MoE routing in the rollout.")
      .unsupported(DENSE_MODELS),
    prometheus: section("verl: a Prometheus endpoint of the rollout servers.", {
      enable: bool(false, "Serve engine metrics to Prometheus.").unsupported(
        "the engine serves no metrics endpoint; rollout metrics go to trainer.logger",
      ),
      port: int(9090, "Prometheus port.").inertWhile(PROMETHEUS),
      file: str("/tmp/ray/session_latest/metrics/prometheus/prometheus.yml", "Its config file.")
        .inertWhile(PROMETHEUS),
      served_model_name: str(ref("actor_rollout_ref.model.path"), "Model name shown.").orNull()
        .inertWhile(PROMETHEUS),
    }),
    quantization: str(null, "verl: vLLM's weight quantization (fp8, torchao).").unsupported(
      "the engine decodes with f32 or f16 weights (rollout.dtype)",
    ),
    quantization_config_file: str(null, "verl: the quantization's config file.").inertWhile(
      "actor_rollout_ref.rollout.quantization",
    ),
    mtp: mapOf(
      ref("actor_rollout_ref.model.mtp"),
      "verl's copy of model.mtp for the rollout; its enable must stay false.",
    ),
  };
}
