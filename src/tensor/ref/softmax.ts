/** CPU reference of softmax / log-softmax over the last axis and their gradients (f64). */

/** Softmax of each row of x [rows, cols]; `log` gives log-softmax. */
export function softmaxRef(x: ArrayLike<number>, cols: number, log = false): Float64Array {
  const rows = x.length / cols;
  const out = new Float64Array(x.length); // [rows, cols]
  for (let r = 0; r < rows; r++) {
    const row = r * cols;
    let m = -Infinity;
    for (let j = 0; j < cols; j++) m = Math.max(m, x[row + j]);
    let s = 0;
    for (let j = 0; j < cols; j++) s += Math.exp(x[row + j] - m);
    const lse = m + Math.log(s);
    for (let j = 0; j < cols; j++) {
      out[row + j] = log ? x[row + j] - lse : Math.exp(x[row + j] - lse);
    }
  }
  return out;
}

/** dx of softmax (or log-softmax) given the forward output y and the upstream gradient g. */
export function softmaxGradRef(
  y: ArrayLike<number>,
  g: ArrayLike<number>,
  cols: number,
  log = false,
): Float64Array {
  const rows = y.length / cols;
  const dx = new Float64Array(y.length); // [rows, cols]
  for (let r = 0; r < rows; r++) {
    const row = r * cols;
    let acc = 0; // sum(g * y) for softmax, sum(g) for log-softmax
    for (let j = 0; j < cols; j++) acc += log ? g[row + j] : g[row + j] * y[row + j];
    for (let j = 0; j < cols; j++) {
      const i = row + j;
      dx[i] = log ? g[i] - Math.exp(y[i]) * acc : y[i] * (g[i] - acc);
    }
  }
  return dx;
}
