/** `critic.*`: the value model and its PPO update. */
import { legacyMicroBatch, NULL_MICRO } from "./legacy_micro.ts";
import { LOSS_AGG_MODES } from "../algos/mod.ts";
import {
  loraFields,
  optimSection,
  parallelSize,
  ppoCheckpointSection,
  trainingStrategy,
} from "./common.ts";
import { fsdpConfigSection } from "./fsdp_engine.ts";
import { hfModelVerlKeys, rolloutN } from "./ppo_model.ts";
import { bool, float, int, oneOf, ref, section, str } from "./schema.ts";
import { DATA_LOADER_SEED } from "./verl_reasons.ts";

export const ppoCritic = section("The value model (PPO with GAE).", {
  enable: bool(null, "Train a critic; null enables it exactly when adv_estimator is gae."),
  rollout_n: rolloutN(),
  strategy: trainingStrategy(),
  ulysses_sequence_parallel_size: parallelSize("GPUs a sequence is split over"),
  optim: optimSection(1e-5, "critic.grad_clip"),
  model: section("The value model: the policy trunk plus a scalar head.", {
    path: str(
      ref("actor_rollout_ref.model.path"),
      "Model folder to start the critic from; null builds the tiny model.",
      { isPath: true },
    ).orNull(),
    enable_gradient_checkpointing: bool(
      false,
      "Recompute each decoder layer's activations in the backward pass (less GPU memory).",
    ),
    use_remove_padding: bool(
      false,
      "Pack each micro-batch's real tokens (no pads) for the embedding, norms, linear layers and " +
        "the value head in the critic's passes; attention runs padded. The same results up to " +
        "f32 rounding, less work on ragged batches.",
    ),
    ...loraFields(", with the value head (score) trained in full as PEFT's modules_to_save"),
    ...hfModelVerlKeys("critic.model"),
    fsdp_config: fsdpConfigSection("critic"),
  }),
  ppo_mini_batch_size: int(
    ref("actor_rollout_ref.actor.ppo_mini_batch_size"),
    "Prompts per critic optimizer step (times rollout.n samples).",
    { min: 1 },
  ),
  ppo_micro_batch_size: legacyMicroBatch("ppo_micro_batch_size_per_gpu"),
  ppo_micro_batch_size_per_gpu: int(
    ref("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"),
    "Samples per critic forward/backward pass;" + NULL_MICRO,
    { min: 1 },
  ).orNull(),
  forward_micro_batch_size: legacyMicroBatch("forward_micro_batch_size_per_gpu"),
  forward_micro_batch_size_per_gpu: int(
    ref("critic.ppo_micro_batch_size_per_gpu"),
    "Samples per forward pass when computing values;" + NULL_MICRO,
    { min: 1 },
  ).orNull(),
  use_dynamic_bsz: bool(
    ref("actor_rollout_ref.actor.use_dynamic_bsz"),
    "Split critic passes by token budget (ppo_max_token_len_per_gpu, " +
      "forward_max_token_len_per_gpu) instead of the micro-batch sizes.",
  ),
  ppo_max_token_len_per_gpu: int(
    32768,
    "use_dynamic_bsz: most tokens per critic forward/backward pass.",
    { min: 1 },
  ),
  forward_max_token_len_per_gpu: int(
    ref("critic.ppo_max_token_len_per_gpu"),
    "use_dynamic_bsz: most tokens per forward pass when computing values.",
    { min: 1 },
  ),
  ppo_epochs: int(ref("actor_rollout_ref.actor.ppo_epochs"), "Passes over each batch.", {
    min: 1,
  }),
  shuffle: bool(ref("actor_rollout_ref.actor.shuffle"), "Shuffle before mini-batching."),
  data_loader_seed: int(42, "verl's seed of the critic's mini-batch shuffle.").unsupported(
    DATA_LOADER_SEED,
  ),
  grad_clip: float(1.0, "Clip the critic's global gradient norm.", { min: 0 }),
  cliprange_value: float(0.5, "Clip range of the value loss around the old values.", { min: 0 }),
  loss_agg_mode: oneOf(
    LOSS_AGG_MODES,
    ref("actor_rollout_ref.actor.loss_agg_mode"),
    "How token value losses reduce to a scalar.",
  ),
  checkpoint: ppoCheckpointSection(),
});
