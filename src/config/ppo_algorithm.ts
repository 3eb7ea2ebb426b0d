/** `algorithm.*`: advantage estimation, KL control, rollout correction. */
import { ADV_ESTIMATORS, KL_ESTIMATORS } from "../algos/mod.ts";
import { anything, bool, float, int, oneOf, oneOfOrNull, section, str } from "./schema.ts";

const RS = "algorithm.rollout_correction.rollout_rs";
const PF_PPO = "algorithm.use_pf_ppo";

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
      rollout_rs: str(null, "verl's rejection sampling of off-policy tokens or sequences.")
        .unsupported(
          "rollout rejection sampling is not built; rollout_is truncates the IS weights instead",
        ),
      rollout_rs_threshold: anything(null, "Threshold of rollout_rs.").inertWhile(RS),
      rollout_is_batch_normalize: bool(false, "Scale the IS weights to mean 1 over the batch.")
        .unsupported("the IS weights are used as truncated at rollout_is_threshold"),
    },
  ),
  use_pf_ppo: bool(false, "verl's PF-PPO: reweight the samples by reward before the update.")
    .unsupported("PF-PPO's reweighting is not built"),
  pf_ppo: section("PF-PPO's reweighting (use_pf_ppo).", {
    reweight_method: oneOf(["pow", "max_min", "max_random"], "pow", "How samples are weighted.")
      .inertWhile(PF_PPO),
    weight_pow: float(2.0, "Exponent of the pow method.").inertWhile(PF_PPO),
  }),
});
