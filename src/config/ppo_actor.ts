/** `actor_rollout_ref.*`: the policy model, its PPO update, the reference model and the rollout. */
import { legacyMicroBatch, NULL_MICRO } from "./legacy_micro.ts";
import {
  KL_ESTIMATORS,
  LOSS_AGG_MODES,
  POLICY_LOSS_KEYS,
  POLICY_LOSSES,
  type PolicyLossKey,
} from "../algos/mod.ts";
import { optimSection, parallelSize, ppoCheckpointSection, trainingStrategy } from "./common.ts";
import { fsdpConfigSection, refFsdpConfigSection } from "./fsdp_engine.ts";
import { ppoModel, rolloutN } from "./ppo_model.ts";
import { DATA_LOADER_SEED, DENSE_MODELS, NO_VISION } from "./verl_reasons.ts";
import { ConfigError } from "./errors.ts";
import {
  bool,
  type Field,
  float,
  type Infer,
  int,
  isRef,
  oneOf,
  ref,
  section,
  str,
} from "./schema.ts";
import { ppoRollout } from "./ppo_rollout.ts";

/** verl's MoE router replay of a model (`at`: its section), switched off (mode: disabled). */
function routerReplay(at: string) {
  const mode = `${at}.router_replay.mode`;
  return section("verl's MoE router replay.", {
    mode: oneOf(["disabled", "R2", "R3"], "disabled", "Record or replay MoE routing decisions.")
      .unsupported(DENSE_MODELS),
    record_file: str(null, "Where recorded routing decisions go.").inertWhile(mode),
    replay_file: str(null, "Routing decisions to replay.").inertWhile(mode),
  });
}

const actor = section("The PPO update of the policy.", {
  rollout_n: rolloutN(),
  use_remove_padding: bool(
    ref("actor_rollout_ref.model.use_remove_padding"),
    "verl's copy of model.use_remove_padding for the actor.",
  ).derived(),
  strategy: trainingStrategy(),
  ulysses_sequence_parallel_size: parallelSize("GPUs a sequence is split over"),
  ppo_mini_batch_size: int(
    256,
    "Prompts per optimizer step; multiplied by rollout.n to count samples, as in verl.",
    { min: 1 },
  ),
  ppo_micro_batch_size: legacyMicroBatch("ppo_micro_batch_size_per_gpu"),
  ppo_micro_batch_size_per_gpu: int(
    8,
    "Samples per forward/backward pass; gradients accumulate over a mini-batch;" + NULL_MICRO,
    { min: 1 },
  ).orNull(),
  use_dynamic_bsz: bool(
    false,
    "Split mini-batches by token budget (ppo_max_token_len_per_gpu) instead of " +
      "ppo_micro_batch_size_per_gpu; the update is the same up to f32 rounding.",
  ),
  ppo_max_token_len_per_gpu: int(
    16384,
    "use_dynamic_bsz: most prompt + response tokens per micro-batch; at least " +
      "max_prompt_length + max_response_length.",
    { min: 1 },
  ),
  keep_logits_gb: float(
    0,
    "Keep a micro-batch's LM-head logits (f32, scored tokens x vocabulary) from its forward for " +
      "its backward when they take at most this many GB, instead of recomputing them chunk by " +
      "chunk: one LM-head product less per micro-batch for that memory (not a verl key; verl " +
      "without use_fused_kernels keeps them whole). 0 recomputes.",
    { min: 0 },
  ),
  ppo_epochs: int(1, "Passes over each rollout batch.", { min: 1 }),
  shuffle: bool(false, "Shuffle samples before splitting them into mini-batches."),
  data_loader_seed: int(42, "verl's seed of the mini-batch shuffle.").unsupported(DATA_LOADER_SEED),
  clip_ratio: float(0.2, "PPO clip range; the default of clip_ratio_low and clip_ratio_high.", {
    min: 0,
  }),
  // verl defaults both to 0.2 as well, which leaves clip_ratio with nothing to do; copying it
  // makes `clip_ratio=0.3` move both bounds while explicit values still win.
  clip_ratio_low: float(
    ref("actor_rollout_ref.actor.clip_ratio"),
    "Lower clip: ratio >= 1 - clip_ratio_low.",
    { min: 0 },
  ),
  clip_ratio_high: float(
    ref("actor_rollout_ref.actor.clip_ratio"),
    "Upper clip: ratio <= 1 + clip_ratio_high (DAPO raises it).",
    { min: 0 },
  ),
  clip_ratio_c: float(3.0, "Dual-clip bound for negative advantages (vanilla); must be > 1."),
  tau_pos: float(1.0, "sapo: gate temperature for tokens with A > 0; must be > 0.", { min: 0 }),
  tau_neg: float(1.05, "sapo: gate temperature for tokens with A <= 0; must be > 0.", { min: 0 }),
  freeze_vision_tower: bool(false, "verl: freeze a vision-language model's vision tower.")
    .unsupported(NO_VISION),
  loss_agg_mode: oneOf(LOSS_AGG_MODES, "token-mean", "How token losses reduce to a scalar."),
  loss_scale_factor: int(
    null,
    "seq-mean-token-sum-norm's divisor of the policy loss (and of its entropy and KL terms); " +
      "null divides by the response length, data.max_response_length.",
    { min: 1 },
  ),
  entropy_coeff: float(0, "Entropy bonus weight (0 disables it)."),
  calculate_entropy: bool(
    false,
    "Compute the entropy in the update even when entropy_coeff is 0, and report actor/entropy " +
      "from the update (the current policy) instead of from the old_log_prob pass, as verl's " +
      "actor does.",
  ),
  calculate_sum_pi_squared: bool(
    null,
    "Compute sum_v pi_v^2 per response token in the old_log_prob pass (the path weights of " +
      "optimal_token_baseline and tir_optimal_token_baseline); null = exactly when the " +
      "estimator needs it.",
  ),
  use_kl_loss: bool(false, "Add a KL-to-reference term to the actor loss (GRPO style)."),
  use_prefix_grouper: bool(false, "verl's PrefixGrouper: one forward of a group's shared prompt.")
    .unsupported(
      "each response's forward runs its whole prompt (the same log-probs, without the shared-" +
        "prefix saving)",
    ),
  kl_loss_coef: float(0.001, "Weight of the KL loss.", { min: 0 }),
  kl_loss_type: oneOf(KL_ESTIMATORS, "low_var_kl", "KL estimator of the KL loss."),
  policy_loss: section("Policy-gradient objective.", {
    loss_mode: oneOf(
      POLICY_LOSSES,
      "vanilla",
      "Policy loss (verl's registry): vanilla, gspo, sapo, gpg, clip_cov, kl_cov, geo_mean, " +
        "cispo; docs/architecture.md lists what each reads.",
    ),
    clip_cov_ratio: float(
      0.0002,
      "clip_cov: fraction of a micro-batch's valid tokens whose loss is cut; must be > 0.",
      { min: 0 },
    ),
    clip_cov_lb: float(1.0, "clip_cov: candidates have covariance above this."),
    clip_cov_ub: float(5.0, "clip_cov: candidates have covariance below this."),
    kl_cov_ratio: float(
      0.0002,
      "kl_cov: fraction of a micro-batch's valid tokens that get the KL term; in (0, 1].",
      { min: 0, max: 1 },
    ),
    ppo_kl_coef: float(0.1, "kl_cov: weight of |log ratio| on the chosen tokens.", { min: 0 }),
  }),
  grad_clip: float(1.0, "Clip the global gradient norm to this value.", { min: 0 }),
  optim: optimSection(1e-6, "actor_rollout_ref.actor.grad_clip"),
  fsdp_config: fsdpConfigSection("actor"),
  checkpoint: ppoCheckpointSection(),
  router_replay: routerReplay("actor_rollout_ref.actor"),
});

const refModel = section("The frozen reference policy (used for KL).", {
  rollout_n: rolloutN(),
  strategy: oneOf(
    ["webgpu", "fsdp", "fsdp2", "megatron"],
    ref("actor_rollout_ref.actor.strategy"),
    "verl's copy of actor.strategy: the reference runs as the actor does.",
  ).derived(),
  ulysses_sequence_parallel_size: parallelSize("GPUs a sequence is split over"),
  fsdp_config: refFsdpConfigSection(),
  router_replay: routerReplay("actor_rollout_ref.ref"),
  log_prob_micro_batch_size: legacyMicroBatch("log_prob_micro_batch_size_per_gpu"),
  log_prob_micro_batch_size_per_gpu: int(
    ref("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"),
    "Samples per reference forward pass;" + NULL_MICRO,
    { min: 1 },
  ).orNull(),
  log_prob_use_dynamic_bsz: bool(
    ref("actor_rollout_ref.actor.use_dynamic_bsz"),
    "Split reference forward passes by token budget (log_prob_max_token_len_per_gpu).",
  ),
  log_prob_max_token_len_per_gpu: int(
    ref("actor_rollout_ref.actor.ppo_max_token_len_per_gpu"),
    "log_prob_use_dynamic_bsz: most tokens per reference forward pass.",
    { min: 1 },
  ),
});

export const ppoActorRolloutRef = section("Policy, rollout and reference model.", {
  hybrid_engine: bool(
    true,
    "verl's hybrid engine: the actor, its rollout and the reference share one process and one " +
      "copy of the weights, as they always do here.",
  ).unsupported(
    "the actor and its rollout always share one process and one copy of the weights here; " +
      "separate rollout workers are distributed.backend=nats (docs/scaling.md)",
  ),
  model: ppoModel,
  actor,
  ref: refModel,
  rollout: ppoRollout,
});

type ActorConfig = Infer<typeof actor>;

function keyValue(a: ActorConfig, key: PolicyLossKey): number {
  const [head, leaf] = key.split(".");
  return leaf === undefined
    ? a[head as keyof ActorConfig] as number
    : a.policy_loss[leaf as keyof ActorConfig["policy_loss"]] as number;
}

/** A key's default; one that copies another actor key (`${...actor.clip_ratio}`) reads it. */
function keyDefault(a: ActorConfig, key: PolicyLossKey): number {
  const [head, leaf] = key.split(".");
  const f = leaf === undefined
    ? actor.fields[head as keyof typeof actor.fields]
    : actor.fields.policy_loss.fields[leaf as keyof typeof actor.fields.policy_loss.fields];
  const def = (f as Field<number>).spec.default;
  const prefix = "actor_rollout_ref.actor.";
  if (isRef(def) && def.ref.startsWith(prefix)) {
    return a[def.ref.slice(prefix.length) as keyof ActorConfig] as number;
  }
  return def as number;
}

/**
 * The policy-loss keys of `actor_rollout_ref.actor` against the chosen loss_mode: a key that only
 * other losses read must keep its default (else it would change nothing), and the keys it reads
 * must be in range.
 */
export function checkPolicyLoss(a: ActorConfig): void {
  const mode = a.policy_loss.loss_mode, reads = POLICY_LOSSES.get(mode).keys;
  const P = "actor_rollout_ref.actor";
  for (const key of POLICY_LOSS_KEYS) {
    if (reads.includes(key) || keyValue(a, key) === keyDefault(a, key)) continue;
    const readers = POLICY_LOSSES.names().filter((n) => POLICY_LOSSES.get(n).keys.includes(key));
    throw new ConfigError(
      `${P}.${key}`,
      `${P}.${key}=${keyValue(a, key)} is not read by ${P}.policy_loss.loss_mode=${mode} ` +
        `(only by ${readers.join(", ")}): remove it, or choose one of those loss modes`,
    );
  }
  const positive = (key: PolicyLossKey) => {
    if (!(keyValue(a, key) > 0)) {
      throw new ConfigError(`${P}.${key}`, `${P}.${key} must be > 0, got ${keyValue(a, key)}`);
    }
  };
  if (mode === "sapo") (positive("tau_pos"), positive("tau_neg"));
  if (mode === "clip_cov") positive("policy_loss.clip_cov_ratio");
  if (mode === "kl_cov") positive("policy_loss.kl_cov_ratio");
}
