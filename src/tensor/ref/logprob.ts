/**
 * CPU reference of the fused log-prob + entropy kernel (shaders/logprob.wgsl), in f64.
 * Rows whose target is -100 get log-prob 0 and no log-prob gradient; their entropy is computed.
 */

export interface LogprobRefOptions {
  temperature?: number;
  /** Entropy row output and gradient; default true. */
  withEntropy?: boolean;
}

export interface LogprobRefResult {
  logProbs: Float64Array; // [N]
  entropy: Float64Array; // [N]
  lse: Float64Array; // [N] logsumexp of logits / temperature
}

/** logits [N, V], targets [N] -> log p(target), entropy, logsumexp per row. */
export function logprobEntropyRef(
  logits: ArrayLike<number>,
  targets: ArrayLike<number>,
  options: LogprobRefOptions = {},
): LogprobRefResult {
  const T = options.temperature ?? 1;
  const N = targets.length, V = N === 0 ? 0 : logits.length / N;
  const logProbs = new Float64Array(N), entropy = new Float64Array(N), lse = new Float64Array(N);
  for (let n = 0; n < N; n++) {
    const row = n * V;
    let m = -Infinity;
    for (let v = 0; v < V; v++) m = Math.max(m, logits[row + v] / T);
    let s = 0;
    for (let v = 0; v < V; v++) s += Math.exp(logits[row + v] / T - m);
    lse[n] = m + Math.log(s);
    // H = -sum_v p_v log p_v
    let h = 0;
    for (let v = 0; v < V; v++) {
      const lp = logits[row + v] / T - lse[n];
      h -= Math.exp(lp) * lp;
    }
    entropy[n] = h;
    const t = targets[n];
    logProbs[n] = t === -100 ? 0 : logits[row + t] / T - lse[n];
  }
  return { logProbs, entropy, lse };
}

/**
 * d loss / d logits [N, V] given gLp [N] = d loss / d logProbs and gEnt [N] = d loss / d entropy:
 *   dx_v = (gLp (1[v = t] - p_v) - gEnt p_v (log p_v + H)) / temperature.
 */
export function logprobEntropyBackwardRef(
  logits: ArrayLike<number>,
  targets: ArrayLike<number>,
  gLp: ArrayLike<number>,
  gEnt: ArrayLike<number> | null,
  options: LogprobRefOptions = {},
): Float64Array {
  const T = options.temperature ?? 1;
  const N = targets.length, V = N === 0 ? 0 : logits.length / N;
  const { lse, entropy } = logprobEntropyRef(logits, targets, options);
  const dx = new Float64Array(N * V);
  for (let n = 0; n < N; n++) {
    const t = targets[n];
    for (let v = 0; v < V; v++) {
      const i = n * V + v;
      const lp = logits[i] / T - lse[n], p = Math.exp(lp);
      let d = t === -100 ? 0 : gLp[n] * ((v === t ? 1 : 0) - p);
      if (gEnt) d -= gEnt[n] * p * (lp + entropy[n]);
      dx[i] = d / T;
    }
  }
  return dx;
}

/** The unfused baseline: log-softmax [N, V] (f64), for checking logprob_unfused.wgsl. */
export function logSoftmaxRef(logits: ArrayLike<number>, V: number, temperature = 1): Float64Array {
  const N = V === 0 ? 0 : logits.length / V;
  const out = new Float64Array(N * V);
  for (let n = 0; n < N; n++) {
    let m = -Infinity, s = 0;
    for (let v = 0; v < V; v++) m = Math.max(m, logits[n * V + v] / temperature);
    for (let v = 0; v < V; v++) s += Math.exp(logits[n * V + v] / temperature - m);
    const lse = m + Math.log(s);
    for (let v = 0; v < V; v++) out[n * V + v] = logits[n * V + v] / temperature - lse;
  }
  return out;
}
