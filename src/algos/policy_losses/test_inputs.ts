/** Inputs the clip_cov and kl_cov tests share. */

// Valid A = [1, 1, 1, -1, -1] (mean 0.2), logp = [-1, -3, -2, -1, -4] (mean -2.2):
// cov = [0.96, -0.64, 0.16, -1.44, 2.16]. x = logp - old = [0.1, -0.2, 0.3, 0.05, -0.15].
const x = [0.1, -0.2, 0.3, 0.05, -0.15], lp = [-1, -3, -2, -1, -4], A = [1, 1, 1, -1, -1];
/** One call of 5 valid tokens and a padding slot, `[2, 3]`. */
export const covInputs = {
  R: 3,
  oldLogProb: new Float64Array([...lp.map((l, i) => l - x[i]), NaN]),
  logProb: new Float64Array([...lp, NaN]),
  advantages: new Float64Array([...A, NaN]),
  responseMask: new Float32Array([1, 1, 1, 1, 1, 0]),
};
