/** `actor_rollout_ref.*`: the policy model, its PPO update, the reference model and the rollout. */
import { KL_ESTIMATORS, LOSS_AGG_MODES, POLICY_LOSSES } from "../algos/mod.ts";
import { checkpointSection, optimSection } from "./common.ts";
import { bool, float, int, map, oneOf, ref, section, str } from "./schema.ts";
import { ppoRollout } from "./ppo_rollout.ts";

const model = section("The policy model (a Hugging Face folder).", {
  path: str(
    null,
    "Model folder with config.json, *.safetensors and tokenizer files; null builds the " +
      "built-in tiny character-level model from scratch.",
    { isPath: true },
  ),
  dtype: oneOf(["float32", "float16"], "float32", "Parameter dtype on the GPU."),
  use_remove_padding: bool(false, "Skip pad tokens in forward passes by packing sequences."),
  enable_gradient_checkpointing: bool(
    false,
    "Recompute activations in the backward pass to save GPU memory.",
  ),
  lora_rank: int(0, "LoRA rank; 0 trains all weights.", { min: 0 }),
  lora_alpha: float(16, "LoRA scaling numerator (scale = alpha / rank)."),
  target_modules: str("all-linear", "Modules that get LoRA adapters."),
  override_config: map("Entries that replace those of the model's config.json."),
  custom_chat_template: str(
    null,
    "A Jinja chat template used instead of the tokenizer's; saved with the checkpoints as " +
      "chat_template.jinja.",
  ),
});

const actor = section("The PPO update of the policy.", {
  strategy: oneOf(["webgpu"], "webgpu", "Training backend."),
  ppo_mini_batch_size: int(
    256,
    "Prompts per optimizer step; multiplied by rollout.n to count samples, as in verl.",
    { min: 1 },
  ),
  ppo_micro_batch_size_per_gpu: int(
    8,
    "Samples per forward/backward pass; gradients accumulate over a mini-batch.",
    { min: 1 },
  ),
  ppo_epochs: int(1, "Passes over each rollout batch.", { min: 1 }),
  shuffle: bool(false, "Shuffle samples before splitting them into mini-batches."),
  clip_ratio: float(0.2, "PPO clip range, used where clip_ratio_low/high are not set.", {
    min: 0,
  }),
  clip_ratio_low: float(0.2, "Lower clip: ratio >= 1 - clip_ratio_low.", { min: 0 }),
  clip_ratio_high: float(0.2, "Upper clip: ratio <= 1 + clip_ratio_high (DAPO raises it).", {
    min: 0,
  }),
  clip_ratio_c: float(3.0, "Dual-clip bound for negative advantages; must be > 1."),
  loss_agg_mode: oneOf(LOSS_AGG_MODES, "token-mean", "How token losses reduce to a scalar."),
  entropy_coeff: float(0, "Entropy bonus weight (0 disables it)."),
  use_kl_loss: bool(false, "Add a KL-to-reference term to the actor loss (GRPO style)."),
  kl_loss_coef: float(0.001, "Weight of the KL loss.", { min: 0 }),
  kl_loss_type: oneOf(KL_ESTIMATORS, "low_var_kl", "KL estimator of the KL loss."),
  policy_loss: section("Policy-gradient objective.", {
    loss_mode: oneOf(
      POLICY_LOSSES,
      "vanilla",
      "vanilla: token-level clipped PPO; gspo: sequence-level importance ratio.",
    ),
  }),
  grad_clip: float(1.0, "Clip the global gradient norm to this value.", { min: 0 }),
  optim: optimSection(1e-6),
  checkpoint: checkpointSection(),
});

const refModel = section("The frozen reference policy (used for KL).", {
  log_prob_micro_batch_size_per_gpu: int(
    ref("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"),
    "Samples per reference forward pass.",
    { min: 1 },
  ),
});

export const ppoActorRolloutRef = section("Policy, rollout and reference model.", {
  model,
  actor,
  ref: refModel,
  rollout: ppoRollout,
});
