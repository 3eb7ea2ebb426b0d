/** `actor_rollout_ref.*`: the policy model, its PPO update, the reference model and the rollout. */
import { legacyMicroBatch } from "./legacy_micro.ts";
import {
  KL_ESTIMATORS,
  LOSS_AGG_MODES,
  POLICY_LOSS_KEYS,
  POLICY_LOSSES,
  type PolicyLossKey,
} from "../algos/mod.ts";
import {
  checkpointSection,
  fsdpConfigSection,
  loraFields,
  optimSection,
  parallelSize,
  trainingStrategy,
} from "./common.ts";
import { ConfigError } from "./errors.ts";
import {
  bool,
  type Field,
  float,
  type Infer,
  int,
  isRef,
  map,
  oneOf,
  ref,
  section,
  str,
} from "./schema.ts";
import { ppoRollout } from "./ppo_rollout.ts";

const model = section("The policy model (a Hugging Face folder).", {
  path: str(
    null,
    "Model folder with config.json, *.safetensors and tokenizer files; null builds the " +
      "built-in tiny character-level model from scratch.",
    { isPath: true },
  ),
  dtype: oneOf(["float32", "float16"], "float32", "Parameter dtype on the GPU.").unsupported(
    "the trainer keeps float32 weights",
  ),
  use_remove_padding: bool(
    false,
    "Pack each micro-batch's real tokens (no pads) for the embedding, norms, linear layers and " +
      "the LM head in the actor, rollout log-prob and reference passes; attention runs padded. " +
      "The same results up to f32 rounding, less work on ragged batches.",
  ),
  enable_gradient_checkpointing: bool(
    false,
    "Keep only each decoder layer's input for the backward pass, which runs the layer again: " +
      "less GPU memory for one more forward; the same gradients.",
  ),
  ...loraFields(),
  trust_remote_code: bool(
    false,
    "Run a model folder's own Python code (transformers' auto_map); never here: a folder's " +
      "architecture must be a built-in family.",
  ).unsupported("no model code is run here: the folder's architecture must be a built-in family"),
  use_shm: bool(false, "verl: load the model through shared memory (/dev/shm).").unsupported(
    "weights load from the folder straight to the GPU; there is no shared-memory staging",
  ),
  override_config: map("Entries that replace those of the model's config.json.").unsupported(
    "edit the model folder's config.json instead",
  ),
  custom_chat_template: str(
    null,
    "A Jinja chat template used instead of the tokenizer's; saved with the checkpoints as " +
      "chat_template.jinja.",
  ),
});

const actor = section("The PPO update of the policy.", {
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
    "Samples per forward/backward pass; gradients accumulate over a mini-batch.",
    { min: 1 },
  ),
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
  ppo_epochs: int(1, "Passes over each rollout batch.", { min: 1 }),
  shuffle: bool(false, "Shuffle samples before splitting them into mini-batches."),
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
  loss_agg_mode: oneOf(LOSS_AGG_MODES, "token-mean", "How token losses reduce to a scalar."),
  entropy_coeff: float(0, "Entropy bonus weight (0 disables it)."),
  calculate_sum_pi_squared: bool(
    null,
    "Compute sum_v pi_v^2 per response token in the old_log_prob pass (the path weights of " +
      "optimal_token_baseline and tir_optimal_token_baseline); null = exactly when the " +
      "estimator needs it.",
  ),
  use_kl_loss: bool(false, "Add a KL-to-reference term to the actor loss (GRPO style)."),
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
  optim: optimSection(1e-6),
  fsdp_config: fsdpConfigSection("actor"),
  checkpoint: checkpointSection(),
});

const refModel = section("The frozen reference policy (used for KL).", {
  ulysses_sequence_parallel_size: parallelSize("GPUs a sequence is split over"),
  fsdp_config: section("verl's FSDP settings of the reference policy.", {
    param_offload: bool(false, "Offload the reference's parameters to the CPU (FSDP).")
      .unsupported(
        "the reference policy runs on the actor's GPU (the actor with its adapters off under " +
          "LoRA, else its own copy of the weights) and has no CPU offload; use LoRA " +
          "(actor_rollout_ref.model.lora_rank) for a reference that costs no memory",
      ),
  }),
  log_prob_micro_batch_size: legacyMicroBatch("log_prob_micro_batch_size_per_gpu"),
  log_prob_micro_batch_size_per_gpu: int(
    ref("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"),
    "Samples per reference forward pass.",
    { min: 1 },
  ),
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
  model,
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
