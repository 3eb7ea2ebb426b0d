/** `critic.*`, `reward_model.*`, `custom_reward_function.*` and `algorithm.*`. */
import { legacyMicroBatch } from "./legacy_micro.ts";
import { ADV_ESTIMATORS, KL_ESTIMATORS, LOSS_AGG_MODES } from "../algos/mod.ts";
import {
  checkpointSection,
  fsdpConfigSection,
  loraFields,
  optimSection,
  parallelSize,
  trainingStrategy,
} from "./common.ts";
import { bool, float, int, map, oneOf, oneOfOrNull, ref, section, str } from "./schema.ts";

export const ppoCritic = section("The value model (PPO with GAE).", {
  enable: bool(null, "Train a critic; null enables it exactly when adv_estimator is gae."),
  strategy: trainingStrategy(),
  ulysses_sequence_parallel_size: parallelSize("GPUs a sequence is split over"),
  optim: optimSection(1e-5),
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
    "Samples per critic forward/backward pass.",
    { min: 1 },
  ),
  forward_micro_batch_size: legacyMicroBatch("forward_micro_batch_size_per_gpu"),
  forward_micro_batch_size_per_gpu: int(
    ref("critic.ppo_micro_batch_size_per_gpu"),
    "Samples per forward pass when computing values.",
    { min: 1 },
  ),
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
  grad_clip: float(1.0, "Clip the critic's global gradient norm.", { min: 0 }),
  cliprange_value: float(0.5, "Clip range of the value loss around the old values.", { min: 0 }),
  loss_agg_mode: oneOf(
    LOSS_AGG_MODES,
    ref("actor_rollout_ref.actor.loss_agg_mode"),
    "How token value losses reduce to a scalar.",
  ),
  checkpoint: checkpointSection(),
});

export const ppoRewardModel = section("Reward computation.", {
  enable: bool(false, "Score with a reward model; only rule-based rewards exist, keep false."),
  reward_manager: oneOf(
    ["naive", "dapo"],
    "naive",
    "naive: call compute_score once per sample and put the score on its last token; dapo: " +
      "the same, plus a plain number's score as the acc column of reward_extra_info and the " +
      "overlong_buffer penalty.",
  ),
  overlong_buffer: section("DAPO's soft penalty for responses near max_response_length.", {
    enable: bool(false, "Penalise long responses (needs reward_manager=dapo)."),
    len: int(0, "Tokens before data.max_response_length over which the penalty grows.", {
      min: 0,
    }),
    penalty_factor: float(0.0, "Penalty at data.max_response_length (linear from 0).", {
      min: 0,
    }),
    log: bool(
      false,
      "Add overlong_reward and overlong to reward_extra_info and log their means.",
    ),
  }),
});

export const ppoCustomReward = section("A user reward function run in a sandboxed worker.", {
  path: str(null, "TS/JS module exporting the function; null uses the built-in scorers.", {
    isPath: true,
  }),
  name: str("compute_score", "Exported function name."),
  reward_kwargs: map("Extra options passed to the function as a fifth argument."),
  timeout_s: float(10, "Per-sample time limit; a call over it is counted in reward/timeouts.", {
    min: 0,
  }),
  batch_timeout_s: float(
    null,
    "Time budget of one scoring call (a training step's batch, a validation batch, all of " +
      "deno task eval); when it runs out the running sample counts in reward/timeouts and the " +
      "unscored rest in reward/skipped. null = no budget (a function that hangs on every sample " +
      "then costs samples x timeout_s).",
    { min: 0 },
  ),
});

export const ppoAlgorithm = section("Advantage estimation and KL control.", {
  gamma: float(1.0, "Discount factor.", { min: 0, max: 1 }),
  lam: float(1.0, "GAE lambda.", { min: 0, max: 1 }),
  adv_estimator: oneOf(ADV_ESTIMATORS, "gae", "Advantage estimator."),
  norm_adv_by_std_in_grpo: bool(
    true,
    "Divide GRPO advantages by the group std; false gives Dr.GRPO.",
  ),
  filter_groups: section("DAPO's dynamic sampling: keep only groups whose metric varies.", {
    enable: bool(false, "Drop groups whose responses all have the same metric value."),
    metric: str(
      null,
      "Value compared within a group: seq_reward (summed token scores), seq_final_reward " +
        "(summed token rewards), or a reward_extra_info column such as acc or score.",
    ),
    max_num_gen_batches: int(
      0,
      "Generation batches per step before giving up with an error; 0 or less = no limit.",
    ),
  }),
  use_kl_in_reward: bool(
    false,
    "Subtract beta * KL(policy || ref) from the token rewards (exclusive with use_kl_loss).",
  ),
  kl_penalty: oneOf(KL_ESTIMATORS, "kl", "KL estimator of the in-reward penalty."),
  kl_ctrl: section("Coefficient of the in-reward KL penalty.", {
    type: oneOf(["fixed", "adaptive"], "fixed", "fixed keeps kl_coef; adaptive tracks target_kl."),
    kl_coef: float(0.001, "Initial KL coefficient beta.", { min: 0 }),
    horizon: int(10000, "Adaptive controller horizon in samples.", { min: 1 }),
    target_kl: float(0.1, "KL the adaptive controller aims for.", { min: 0 }),
  }),
  rollout_correction: section(
    "Importance sampling against the rollout policy (off-policy workers, f16 rollouts).",
    {
      rollout_is: oneOfOrNull(
        ["token", "sequence"],
        "Truncated IS weights min(pi_old / pi_rollout, threshold) per token or per sequence, " +
          "multiplying the policy-gradient loss (in bypass mode, loss_type reinforce only: " +
          "pi_old is then the current policy); null = off. Needs rollout.calculate_log_probs.",
      ),
      rollout_is_threshold: float(2.0, "Upper bound of the IS weights.", { min: 1 }),
      bypass_mode: bool(
        false,
        "Skip the old_log_prob forward: the rollout's log-probs are the old log-probs (2 " +
          "policies instead of 3). Needs rollout.calculate_log_probs and policy_loss.loss_mode " +
          "vanilla; the loss is chosen by loss_type.",
      ),
      loss_type: oneOf(
        ["ppo_clip", "reinforce"],
        "ppo_clip",
        "bypass_mode's loss: ppo_clip = PPO clip with ratio pi / pi_rollout (no extra IS " +
          "weights, so rollout_is must be null); reinforce = -A w log pi with w the detached " +
          "rollout_is weights (token or sequence, truncated at rollout_is_threshold; null: " +
          "plain REINFORCE).",
      ),
    },
  ),
});
