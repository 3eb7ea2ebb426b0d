/**
 * Σπ² over the vocabulary at each position, on the GPU, for the optimal token baselines:
 * softmax(logits / τ), squared, summed over the last axis. Composed of tensor ops; the reference
 * is src/algos/sum_pi_squared.ts.
 */
import { mul, mulScalar, softmax, sum, type Tensor } from "../../tensor/mod.ts";

/** logits `[..., V]` -> Σ_v π_v² `[...]`, with π = softmax(logits / temperature). */
export function sumPiSquared(logits: Tensor, options: { temperature?: number } = {}): Tensor {
  const tau = options.temperature ?? 1;
  const scaled = tau === 1 ? logits : mulScalar(logits, 1 / tau);
  const p = softmax(scaled);
  if (scaled !== logits) scaled.dispose();
  const p2 = mul(p, p);
  p.dispose();
  const out = sum(p2, { axis: -1 });
  p2.dispose();
  return out;
}
