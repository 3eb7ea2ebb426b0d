/**
 * Log-probabilities of target tokens (and per-position entropies) from logits, with autograd.
 * Positions whose target is -100 give 0 and receive no gradient.
 */
import type { Tensor } from "../tensor/mod.ts";
import { crossEntropy } from "../tensor/ops/cross_entropy.ts";
import { mul, mulScalar, neg } from "../tensor/ops/elementwise.ts";
import { sum } from "../tensor/ops/reduce.ts";
import { logSoftmax, softmax } from "../tensor/ops/softmax.ts";

export interface TokenLogProbs {
  logProbs: Tensor; // [N] with N = B * T
  entropy: Tensor | null; // [N]
}

/**
 * logits [B, T, V] (divided by the sampling temperature, as the rollout sampled with it),
 * targets i32 [B * T] -> log p(target) and, when asked, the entropy of each position.
 */
export function tokenLogProbs(
  logits: Tensor,
  targets: Tensor,
  options: { withEntropy: boolean; temperature?: number },
): TokenLogProbs {
  const V = logits.shape.at(-1)!;
  let flat = logits.reshape([-1, V]);
  const temp = options.temperature ?? 1;
  if (temp !== 1) flat = mulScalar(flat, 1 / temp);
  const logProbs = neg(crossEntropy(flat, targets, { ignoreIndex: -100, reduction: "none" }));
  let entropy: Tensor | null = null;
  if (options.withEntropy) {
    // H = -sum_v p_v log p_v
    const lsm = logSoftmax(flat);
    entropy = neg(sum(mul(softmax(flat), lsm), { axis: -1 }));
  }
  return { logProbs, entropy };
}
