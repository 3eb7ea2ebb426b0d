/**
 * Log-probabilities of target tokens (and per-position entropies) from logits, with autograd,
 * through the fused kernel of src/tensor/ops/logprob.ts (one pass over the vocabulary per row).
 * Positions whose target is -100 give 0 and receive no log-prob gradient.
 */
import type { Tensor } from "../tensor/mod.ts";
import { logprobEntropy } from "../tensor/ops/logprob.ts";

export interface TokenLogProbs {
  logProbs: Tensor; // [N] with N = B * T
  entropy: Tensor | null; // [N]
}

/**
 * logits [B, T, V] (divided by the sampling temperature, as the rollout sampled with it),
 * targets i32 [B * T] -> log p(target) and, when asked, the entropy of each position.
 * `backward([logProbs, entropy], [seedLp, seedEnt])` runs one fused backward with both seeds.
 */
export function tokenLogProbs(
  logits: Tensor,
  targets: Tensor,
  options: { withEntropy: boolean; temperature?: number },
): TokenLogProbs {
  // No reshape: a reshaped view carries no autograd node, the op takes [B, T, V] as is.
  return logprobEntropy(logits, targets, {
    temperature: options.temperature ?? 1,
    withEntropy: options.withEntropy,
  });
}
