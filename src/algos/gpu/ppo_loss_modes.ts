/**
 * How the fused policy-loss kernel (shaders/ppo_loss.wgsl) runs each `actor.policy_loss.loss_mode`:
 * its code in the shader, the aggregation of its pg loss when the loss fixes one, whether the
 * dual-clip constant applies, and whether a token choice (shaders/ppo_loss_cov.wgsl) runs first.
 * The references are the losses of src/algos/policy_losses/.
 */
import { Registry } from "../../tensor/mod.ts";
import type { PgAggMode } from "./ppo_loss_agg.ts";

/** The GPU form of one policy loss. */
export interface GpuPolicyLoss {
  /** `loss_mode` of shaders/ppo_loss.wgsl */
  code: number;
  /** aggregation of the pg loss when the loss fixes it (gspo, sapo, geo_mean), else loss_agg_mode */
  pgAggMode?: PgAggMode;
  /** whether clip_ratio_c applies (and must be > 1) */
  dualClip: boolean;
  /** the covariance-ranked token choice that runs before the loss */
  select?: "clip_cov" | "kl_cov";
}

/**
 * The policy losses the GPU runs, by verl name. Every name of src/algos' POLICY_LOSSES needs an
 * entry here (a test checks it): the trainer has no CPU fallback.
 */
export const GPU_POLICY_LOSSES: Registry<GpuPolicyLoss> = new Registry("GPU policy loss");
GPU_POLICY_LOSSES.register("vanilla", { code: 0, dualClip: true });
GPU_POLICY_LOSSES.register("gspo", { code: 1, pgAggMode: "seq-mean-token-mean", dualClip: false });
GPU_POLICY_LOSSES.register("sapo", { code: 2, pgAggMode: "seq-mean-token-mean", dualClip: false });
GPU_POLICY_LOSSES.register("gpg", { code: 3, dualClip: false });
GPU_POLICY_LOSSES.register("clip_cov", { code: 4, dualClip: false, select: "clip_cov" });
GPU_POLICY_LOSSES.register("kl_cov", { code: 5, dualClip: false, select: "kl_cov" });
GPU_POLICY_LOSSES.register("geo_mean", { code: 6, pgAggMode: "row-mean", dualClip: false });
GPU_POLICY_LOSSES.register("cispo", { code: 7, dualClip: false });
GPU_POLICY_LOSSES.register("reinforce", { code: 8, dualClip: false });

/** The GPU form of `actor.policy_loss.loss_mode` `name`; an error naming the key when none. */
export function gpuPolicyLoss(name: string): GpuPolicyLoss {
  if (!GPU_POLICY_LOSSES.has(name)) {
    throw new Error(
      `actor.policy_loss.loss_mode "${name}" has no GPU implementation; GPU policy losses: ` +
        GPU_POLICY_LOSSES.names().join(", "),
    );
  }
  return GPU_POLICY_LOSSES.get(name);
}
