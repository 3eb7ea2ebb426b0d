/**
 * verl's `fsdp_config` sections (its FSDPEngineConfig) of the actor, the critic and the reference:
 * the mixed precision of the passes, and the FSDP keys verl writes into every config, accepted at
 * the values that describe one GPU holding everything.
 */
import { bool, int, oneOf, section } from "./schema.ts";
import { LEGACY_WORKERS, NO_SHARDING } from "./verl_reasons.ts";

/** verl's names of a dtype (PrecisionType): short and long spellings. */
export const PRECISION_NAMES = ["fp32", "float32", "fp16", "float16", "bf16", "bfloat16"] as const;
export type PrecisionName = typeof PRECISION_NAMES[number];

/** `wrap_policy`: FSDP's auto-wrap threshold. */
export function wrapPolicySection() {
  return section("FSDP's auto-wrap policy.", {
    min_num_params: int(0, "Parameters a module needs to be wrapped on its own (FSDP).")
      .unsupported(NO_SHARDING),
  });
}

/**
 * The keys every verl FSDPEngineConfig carries. `forwardOnly` is what verl sets for the role
 * (true for the reference); `dtypeWhy` says where the role's compute precision is chosen here.
 */
function engineKeys(o: { role: string; forwardOnly: boolean; dtypeWhy: string }) {
  return {
    wrap_policy: wrapPolicySection(),
    optimizer_offload: bool(false, "Offload the optimizer state to the CPU (FSDP).").unsupported(
      NO_SHARDING,
    ),
    offload_policy: bool(false, "FSDP2's CPU offload of parameters, gradients and optimizer.")
      .unsupported(NO_SHARDING),
    reshard_after_forward: bool(true, "Free the gathered parameters after the forward (FSDP).")
      .unsupported(NO_SHARDING),
    fsdp_size: int(-1, "GPUs per FSDP shard group; -1: all (FSDP).").unsupported(NO_SHARDING),
    forward_prefetch: bool(false, "Prefetch the next all-gather during the forward (FSDP1).")
      .unsupported(NO_SHARDING),
    model_dtype: oneOf(PRECISION_NAMES, "fp32", "Dtype of the master weights.").unsupported(
      "master weights and AdamW moments are f32; mixed_precision.param_dtype picks the compute " +
        "precision",
    ),
    use_orig_params: bool(false, "FSDP1's use_orig_params.").unsupported(NO_SHARDING),
    seed: int(42, "verl's engine seed.").unsupported(
      `${LEGACY_WORKERS}; seeds here come from trainer.seed`,
    ),
    full_determinism: bool(false, "verl's switch of PyTorch's deterministic algorithms.")
      .unsupported(`${LEGACY_WORKERS}; there is no such switch here`),
    forward_only: bool(
      o.forwardOnly,
      `Whether the ${o.role} only runs forward passes (verl sets it by role).`,
    ).unsupported(
      o.forwardOnly
        ? "the reference policy only runs forward passes"
        : `the ${o.role} trains, so it runs backward passes too`,
    ),
    strategy: oneOf(
      ["fsdp", "fsdp2"],
      "fsdp",
      "verl's FSDP version: both name the one-GPU training here.",
    ).unsupported("verl's FSDP engine takes fsdp or fsdp2", ["fsdp2"]),
    dtype: oneOf(PRECISION_NAMES, "bfloat16", "verl's compute dtype without mixed_precision.")
      .unsupported(o.dtypeWhy),
  };
}

const ACTOR_DTYPE = "verl reads it only when fsdp_config.mixed_precision is absent; here " +
  "mixed_precision.param_dtype (default fp32) always sets the compute precision: set that";

/**
 * The `fsdp_config` of a trained model (the actor's, the critic's): the mixed precision of its
 * passes, and the FSDP keys at the values that describe one GPU holding everything
 * (`param_offload=False` works, `True` is refused).
 */
export function fsdpConfigSection(role: string) {
  return section(
    `verl's FSDP settings of the ${role}: its mixed precision (see README "Precision").`,
    {
      param_offload: bool(false, "Offload parameters to the CPU (FSDP).").unsupported(NO_SHARDING),
      ...engineKeys({ role, forwardOnly: false, dtypeWhy: ACTOR_DTYPE }),
      mixed_precision: section("FSDP's MixedPrecision: the dtype passes compute in.", {
        param_dtype: oneOf(
          PRECISION_NAMES,
          "fp32",
          `Compute dtype of the ${role}'s forward and backward passes. fp16 (also bf16, which runs ` +
            "as fp16 with one notice: WebGPU has no bf16) multiplies f16 copies of the linear " +
            "layers' inputs and weights, the LM head's included, with f32 accumulation, keeps f32 " +
            "master weights and AdamW moments, and scales the loss dynamically (torch GradScaler: " +
            "2^16 at start, halved and the step skipped on an inf/NaN gradient, doubled after 2000 " +
            "good steps); attention rounds q, k, v, its probabilities and their gradients to " +
            "halves as torch's fp16 SDPA does (f32 sums); norms, RoPE and LoRA-adapted modules " +
            "stay f32. An adapter without shader-f16 runs f32 with one notice. Default fp32 (verl's FSDP default is bf16): WebGPU has no bf16 " +
            "and no tensor cores, so f16 is not faster here, and f32 is the exact path.",
        ),
        reduce_dtype: oneOf(PRECISION_NAMES, "fp32", "Dtype of gradient reduction.").unsupported(
          "gradients accumulate in f32 on one GPU (no reduction between GPUs)",
        ),
        buffer_dtype: oneOf(PRECISION_NAMES, "fp32", "Dtype of module buffers.").unsupported(
          "buffers (RoPE tables) stay f32",
        ),
      }),
    },
  );
}

/** The reference policy's `fsdp_config`: verl's keys, at the values of a forward-only copy. */
export function refFsdpConfigSection() {
  return section("verl's FSDP settings of the reference policy.", {
    param_offload: bool(false, "Offload the reference's parameters to the CPU (FSDP).")
      .unsupported(
        "the reference policy runs on the actor's GPU (the actor with its adapters off under " +
          "LoRA, else its own copy of the weights) and has no CPU offload; use LoRA " +
          "(actor_rollout_ref.model.lora_rank) for a reference that costs no memory",
      ),
    ...engineKeys({
      role: "reference policy",
      forwardOnly: true,
      dtypeWhy: "the reference computes in the actor's precision " +
        "(actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype): set that",
    }),
  });
}
