/**
 * CPU reference of the chunked LM head + log-prob kernel (shaders/lm_head_logprob.wgsl), in f64:
 * logits of one vocabulary chunk at a time folded into an online (max, Σe, Σe·(x-max), Σe²)
 * state per row, as the kernel does, and the backward as products with the recomputed chunk
 * gradients. With z = h W^T / T: log p = z[t] - lse, H = -Σ p log p, Σπ² = Σ p².
 */

export interface LmHeadRefOptions {
  temperature?: number;
  /** Vocabulary columns per chunk; default: the whole vocabulary at once. */
  chunk?: number;
}

export interface LmHeadRefResult {
  logProbs: Float64Array; // [N]
  entropy: Float64Array; // [N]
  sumPiSquared: Float64Array; // [N]
  lse: Float64Array; // [N]
}

/** Logit z[n, v] / T of hidden [N, C] against weight [V, C]. */
function logit(h: ArrayLike<number>, w: ArrayLike<number>, n: number, v: number, C: number) {
  let s = 0;
  for (let c = 0; c < C; c++) s += h[n * C + c] * w[v * C + c];
  return s;
}

/** hidden [N, C], weight [V, C], targets [N] (-100 ignored) -> per-row statistics. */
export function lmHeadLogprobRef(
  hidden: ArrayLike<number>,
  weight: ArrayLike<number>,
  targets: ArrayLike<number>,
  options: LmHeadRefOptions = {},
): LmHeadRefResult {
  const T = options.temperature ?? 1;
  const N = targets.length, C = N === 0 ? 0 : hidden.length / N, V = weight.length / C;
  const chunk = options.chunk ?? V;
  const out: LmHeadRefResult = {
    logProbs: new Float64Array(N),
    entropy: new Float64Array(N),
    sumPiSquared: new Float64Array(N),
    lse: new Float64Array(N),
  };
  for (let n = 0; n < N; n++) {
    let m = -Infinity, s = 0, t = 0, s2 = 0, xt = NaN;
    for (let v0 = 0; v0 < V; v0 += chunk) {
      const z: number[] = [];
      for (let v = v0; v < Math.min(V, v0 + chunk); v++) z.push(logit(hidden, weight, n, v, C) / T);
      const cm = Math.max(...z);
      let cs = 0, ct = 0, cs2 = 0;
      for (const x of z) {
        const e = Math.exp(x - cm);
        cs += e;
        ct += e * (x - cm);
        cs2 += e * e;
      }
      // merge (m, s, t, s2) with the chunk's, both relative to their own max
      const mm = Math.max(m, cm), ea = Math.exp(m - mm), eb = Math.exp(cm - mm);
      t = (s === 0 ? 0 : ea * (t + (m - mm) * s)) + eb * (ct + (cm - mm) * cs);
      s2 = ea * ea * s2 + eb * eb * cs2;
      s = ea * s + eb * cs;
      m = mm;
      const tg = targets[n];
      if (tg >= v0 && tg < v0 + chunk) xt = z[tg - v0];
    }
    out.lse[n] = m + Math.log(s);
    out.entropy[n] = Math.log(s) - t / s;
    out.sumPiSquared[n] = s2 / (s * s);
    out.logProbs[n] = targets[n] === -100 ? 0 : xt - out.lse[n];
  }
  return out;
}

/**
 * Gradients of Σ gLp·log p + Σ gEnt·H: with dz = (gLp (1[v = t] - p) - gEnt p (log p + H)) / T,
 * dHidden = dz W [N, C] and dWeight = dz^T h [V, C].
 */
export function lmHeadLogprobBackwardRef(
  hidden: ArrayLike<number>,
  weight: ArrayLike<number>,
  targets: ArrayLike<number>,
  gLp: ArrayLike<number>,
  gEnt: ArrayLike<number> | null,
  options: LmHeadRefOptions = {},
): { dHidden: Float64Array; dWeight: Float64Array } {
  const T = options.temperature ?? 1;
  const N = targets.length, C = N === 0 ? 0 : hidden.length / N, V = weight.length / C;
  const { lse, entropy } = lmHeadLogprobRef(hidden, weight, targets, options);
  const dHidden = new Float64Array(N * C), dWeight = new Float64Array(V * C);
  for (let n = 0; n < N; n++) {
    const t = targets[n];
    for (let v = 0; v < V; v++) {
      const lp = logit(hidden, weight, n, v, C) / T - lse[n], p = Math.exp(lp);
      let d = t === -100 ? 0 : gLp[n] * ((v === t ? 1 : 0) - p);
      if (gEnt) d -= gEnt[n] * p * (lp + entropy[n]);
      d /= T;
      for (let c = 0; c < C; c++) {
        dHidden[n * C + c] += d * weight[v * C + c];
        dWeight[v * C + c] += d * hidden[n * C + c];
      }
    }
  }
  return { dHidden, dWeight };
}
