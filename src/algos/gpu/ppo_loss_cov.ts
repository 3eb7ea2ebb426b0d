/**
 * The token choice of clip_cov and kl_cov on the GPU (shaders/ppo_loss_cov.wgsl), one workgroup
 * over every token of the call; src/algos/policy_losses/cov_select.ts is the reference. The quota
 * comes from the valid-token count the caller knows (the trainer's micro-batch mask is on the
 * CPU), so verl's int(ratio · N) is taken in f64 as in Python, and nothing is read back.
 *
 * One workgroup makes about seven passes over the call's B·C tokens (means, keys, four byte
 * histograms of the radix select, the final choice). For a micro-batch of thousands to tens of
 * thousands of tokens that costs less than a readback of the covariances would (~11 ms per round
 * trip); on the CPU adapter it measured ~2 ms at 4k tokens and ~35 ms at 64k.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { Tensor } from "../../tensor/mod.ts";
import { clipCovCount, klCovCount } from "../policy_losses/cov_select.ts";
import { maskType } from "./ppo_loss_agg.ts";

/** Invocations of the single workgroup (shaders/ppo_loss_cov.wgsl #const WG). */
const WG = 256;

/** What the choice depends on besides the data. */
export interface CovSelectOptions {
  mode: "clip_cov" | "kl_cov";
  /** valid tokens of `mask` (Σ mask), which sizes the quota */
  validTokens: number;
  /** clip_cov_ratio or kl_cov_ratio */
  ratio: number;
  /** clip_cov: candidates have lb < cov < ub */
  lb?: number;
  ub?: number;
  /** clip_cov: the PPO clip range that excludes already-clipped tokens */
  clipLow?: number;
  clipHigh?: number;
  /** clip_cov: seed of the random choice */
  seed?: number;
}

/**
 * 1 for each chosen token of `[B, C]` inputs, else 0 (`[B, C]` f32). The inputs' shapes and
 * dtypes are the caller's to check (ppoPolicyLoss does).
 */
export function covSelect(
  logProb: Tensor,
  oldLogProb: Tensor,
  advantages: Tensor,
  mask: Tensor,
  o: CovSelectOptions,
): Tensor {
  if (!Number.isInteger(o.validTokens) || o.validTokens < 0 || o.validTokens > mask.size) {
    throw new Error(
      `covSelect: validTokens must be an integer in [0, ${mask.size}], got ${o.validTokens}`,
    );
  }
  const count = o.mode === "kl_cov"
    ? klCovCount(o.ratio, o.validTokens)
    : clipCovCount(o.ratio, o.validTokens);
  const n = mask.size;
  const keys = Tensor.empty([n], "u32", "ppo_loss_cov.keys");
  const out = Tensor.empty(mask.shape, "f32", "ppo_loss_cov.chosen");
  gpu().dispatch({ shader: "ppo_loss_cov", defines: { MaskT: maskType(mask), WG } }, {
    params: packParams([
      n,
      o.mode === "kl_cov" ? 1 : 0,
      count,
      (o.seed ?? 0) >>> 0,
      { f32: o.lb ?? 1.0 },
      { f32: o.ub ?? 5.0 },
      { f32: o.clipLow ?? 0.2 },
      { f32: o.clipHigh ?? 0.2 },
    ]),
    buffers: [
      logProb.buffer,
      oldLogProb.buffer,
      advantages.buffer,
      mask.buffer,
      keys.buffer,
      out.buffer,
    ],
    workgroups: [1],
  });
  keys.dispose();
  return out;
}
