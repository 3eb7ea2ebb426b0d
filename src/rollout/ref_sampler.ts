/**
 * Plain-TS reference of the GPU sampler (shaders/sampling.wgsl): the exact distribution that
 * temperature, top-k and top-p leave (HF's warper order), the same counter-based uniform, and a
 * per-row draw. Used by the statistical tests and to cross-check the kernel.
 */

export interface SamplingOptions {
  temperature: number;
  /** Keep the k likeliest tokens; 0 or less (or >= vocab) = off. */
  topK: number;
  /** Nucleus threshold; 1 = off. */
  topP: number;
  /** false = greedy (first argmax); so is temperature 0. */
  doSample: boolean;
}

function pcg(v: number): number {
  const s = (Math.imul(v >>> 0, 747796405) + 2891336453) >>> 0;
  const w = Math.imul(((s >>> ((s >>> 28) + 4)) ^ s) >>> 0, 277803737) >>> 0;
  return ((w >>> 22) ^ w) >>> 0;
}

/** The kernel's uniform in [0, 1) for (seed, step, row): 24 bits of a PCG hash chain. */
export function counterUniform(seed: number, step: number, row: number): number {
  const h = pcg((row ^ pcg((step ^ pcg(seed >>> 0)) >>> 0)) >>> 0);
  return (h >>> 8) / 16777216;
}

/**
 * The temperature log-probs are taken at (rollout, old_log_prob, ref, update_actor): the sampling
 * temperature, except that 0 (greedy, as in vLLM and verl's val_kwargs) uses the untempered
 * distribution, 1, since softmax(logits / 0) is undefined.
 */
export function logProbTemperature(temperature: number): number {
  return temperature > 0 ? temperature : 1;
}

/** 1 / logProbTemperature(temperature). */
export function inverseTemperature(temperature: number): number {
  return 1 / logProbTemperature(temperature);
}

/**
 * Probabilities of each token under the sampling rule (greedy: one-hot at the first argmax).
 * Ties at the top-k / top-p boundary are kept, matching the kernel's threshold. logits [V]
 */
export function samplingDistribution(
  logits: ArrayLike<number>,
  options: SamplingOptions,
): Float64Array {
  const V = logits.length;
  const z = Float64Array.from(
    logits,
    (x) => Math.fround(x * inverseTemperature(options.temperature)),
  );
  const probs = new Float64Array(V);
  let arg = 0;
  for (let i = 1; i < V; i++) if (z[i] > z[arg]) arg = i;
  // temperature 0 is greedy whatever doSample says, as in the kernel.
  if (!options.doSample || !(options.temperature > 0)) {
    probs[arg] = 1;
    return probs;
  }
  const sorted = [...z].sort((a, b) => b - a); // descending
  let thr = -Infinity;
  if (options.topK > 0 && options.topK < V) thr = sorted[options.topK - 1];
  const m = sorted[0];
  if (options.topP < 1) {
    const keptMass = sorted.reduce((a, v) => (v >= thr ? a + Math.exp(v - m) : a), 0);
    const need = options.topP * keptMass;
    // Walk down distinct values until the mass of everything at or above reaches `need`.
    let acc = 0;
    for (let i = 0; i < V && sorted[i] >= thr; i++) {
      acc += Math.exp(sorted[i] - m);
      const lastOfTie = i + 1 === V || sorted[i + 1] !== sorted[i];
      if (lastOfTie && acc >= need) {
        thr = Math.max(thr, sorted[i]);
        break;
      }
    }
  }
  let total = 0;
  for (let i = 0; i < V; i++) if (z[i] >= thr) total += Math.exp(z[i] - m);
  for (let i = 0; i < V; i++) probs[i] = z[i] >= thr ? Math.exp(z[i] - m) / total : 0;
  return probs;
}

/** log_softmax(logits / temperature)[token] over the whole vocabulary. logits [V] */
export function tokenLogProb(logits: ArrayLike<number>, token: number, temperature: number) {
  const inv = inverseTemperature(temperature);
  let m = -Infinity;
  for (let i = 0; i < logits.length; i++) m = Math.max(m, logits[i] * inv);
  let s = 0;
  for (let i = 0; i < logits.length; i++) s += Math.exp(logits[i] * inv - m);
  return logits[token] * inv - m - Math.log(s);
}

/**
 * Draws one token per row with the kernel's uniform; the order of the inverse CDF differs from the
 * kernel's (index order here), so individual draws may differ while the distribution is the same.
 * logits [N, V] -> tokens [N]
 */
export function refSample(
  logits: Float32Array,
  rows: number,
  options: SamplingOptions & { seed: number; step: number },
): Int32Array {
  const V = logits.length / rows;
  const out = new Int32Array(rows);
  for (let r = 0; r < rows; r++) {
    const probs = samplingDistribution(logits.subarray(r * V, (r + 1) * V), options);
    const u = counterUniform(options.seed, options.step, r);
    let acc = 0;
    let pick = -1;
    for (let i = 0; i < V; i++) {
      if (probs[i] === 0) continue;
      acc += probs[i];
      pick = i;
      if (u < acc) break;
    }
    out[r] = pick;
  }
  return out;
}
