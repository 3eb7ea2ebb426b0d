/** `actor_rollout_ref.rollout.*`: sampling settings of the generation engine. */
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

const MULTI_TURN = "rollouts are single-turn; the tool-calling agent loop is not available";

export const ppoRollout = section("Generation engine and sampling.", {
  name: oneOf(["webgpu"], "webgpu", "Rollout engine (KV-cache decoding in WGSL)."),
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
  log_prob_micro_batch_size_per_gpu: int(
    16,
    "Samples per forward pass when recomputing old log-probs.",
    { min: 1 },
  ),
  calculate_log_probs: bool(
    false,
    "Keep the sampler's log-probs of the chosen tokens (for debugging the recomputed ones).",
  ),
  multi_turn: section("Multi-turn agent loop.", {
    enable: bool(false, "Run the tool-calling agent loop instead of single-turn generation.")
      .unsupported(MULTI_TURN),
    max_assistant_turns: int(null, "Most assistant turns per sample; null = until the budget.", {
      min: 1,
    }).unsupported(MULTI_TURN),
    tool_config_path: str(null, "YAML file describing the tools.", { isPath: true }).unsupported(
      MULTI_TURN,
    ),
  }),
  val_kwargs: valKwargs,
});
