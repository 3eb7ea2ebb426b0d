/** CPU reference of one AdamW step (PyTorch's torch.optim.AdamW semantics), in place. */
export interface AdamWRefOptions {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  step: number; // 1-based
  gradScale?: number; // clip scale; 0 skips the update
}

export function adamwRef(
  param: Float32Array,
  grad: Float32Array,
  m: Float32Array,
  v: Float32Array,
  o: AdamWRefOptions,
): void {
  const scale = o.gradScale ?? 1;
  if (!(scale > 0)) return;
  const c1 = 1 - o.beta1 ** o.step, c2 = 1 - o.beta2 ** o.step;
  for (let i = 0; i < param.length; i++) {
    const g = grad[i] * scale;
    m[i] = o.beta1 * m[i] + (1 - o.beta1) * g;
    v[i] = o.beta2 * v[i] + (1 - o.beta2) * g * g;
    const w = param[i] * (1 - o.lr * o.weightDecay);
    param[i] = w - (o.lr * (m[i] / c1)) / (Math.sqrt(v[i] / c2) + o.eps);
  }
}
