/**
 * Σπ² per position, the plain-TS reference of the GPU op in gpu/sum_pi_squared.ts:
 *   Σ_v softmax(z/τ)_v² = exp(logsumexp(2z/τ) - 2·logsumexp(z/τ))
 * which the optimal token baselines read for their path-variance weights.
 */

/** logits `[N, V]` (row-major) -> `[N]`, at temperature τ. */
export function sumPiSquaredRef(
  logits: ArrayLike<number>,
  V: number,
  temperature = 1,
): Float64Array {
  const N = logits.length / V;
  if (!Number.isInteger(N)) {
    throw new Error(`logits length ${logits.length} is not N * V = N * ${V}`);
  }
  const out = new Float64Array(N);
  for (let n = 0; n < N; n++) {
    let max = -Infinity;
    for (let v = 0; v < V; v++) max = Math.max(max, logits[n * V + v] / temperature);
    let z = 0, z2 = 0;
    for (let v = 0; v < V; v++) {
      const e = Math.exp(logits[n * V + v] / temperature - max);
      z += e;
      z2 += e * e;
    }
    out[n] = z2 / (z * z);
  }
  return out;
}
