/** CPU reference of the fused cross-entropy (f64), forward and gradient. */

export interface CrossEntropyRefOptions {
  ignoreIndex?: number;
  reduction?: "mean" | "sum" | "none";
}

/** Loss of logits [N, V] against targets [N]: [N] for "none", else one value. */
export function crossEntropyRef(
  logits: ArrayLike<number>,
  targets: ArrayLike<number>,
  v: number,
  options: CrossEntropyRefOptions = {},
): Float64Array {
  const { ignoreIndex = -100, reduction = "mean" } = options;
  const n = targets.length;
  const loss = new Float64Array(n); // [N]
  let count = 0;
  for (let i = 0; i < n; i++) {
    if (targets[i] === ignoreIndex) continue;
    const row = i * v;
    let m = -Infinity;
    for (let j = 0; j < v; j++) m = Math.max(m, logits[row + j]);
    let s = 0;
    for (let j = 0; j < v; j++) s += Math.exp(logits[row + j] - m);
    loss[i] = m + Math.log(s) - logits[row + targets[i]];
    count++;
  }
  if (reduction === "none") return loss;
  let total = 0;
  for (let i = 0; i < n; i++) total += loss[i];
  return Float64Array.of(reduction === "mean" ? total / Math.max(count, 1) : total);
}

/** d loss / d logits [N, V] for upstream gradient g ([N] for "none", else one value). */
export function crossEntropyGradRef(
  logits: ArrayLike<number>,
  targets: ArrayLike<number>,
  v: number,
  g: ArrayLike<number>,
  options: CrossEntropyRefOptions = {},
): Float64Array {
  const { ignoreIndex = -100, reduction = "mean" } = options;
  const n = targets.length;
  let count = 0;
  for (let i = 0; i < n; i++) if (targets[i] !== ignoreIndex) count++;
  const dx = new Float64Array(n * v); // [N, V]
  for (let i = 0; i < n; i++) {
    if (targets[i] === ignoreIndex) continue;
    const gi = reduction === "none" ? g[i] : reduction === "mean" ? g[0] / count : g[0];
    const row = i * v;
    let m = -Infinity;
    for (let j = 0; j < v; j++) m = Math.max(m, logits[row + j]);
    let s = 0;
    for (let j = 0; j < v; j++) s += Math.exp(logits[row + j] - m);
    for (let j = 0; j < v; j++) {
      const p = Math.exp(logits[row + j] - m) / s;
      dx[row + j] = gi * (p - (j === targets[i] ? 1 : 0));
    }
  }
  return dx;
}
