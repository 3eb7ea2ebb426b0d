/** CPU reference of SwiGLU: out = silu(gate) * up elementwise, silu(g) = g / (1 + exp(-g)). */

function sigmoid(g: number): number {
  return 1 / (1 + Math.exp(-g));
}

/** out [N] for gate [N], up [N]. */
export function swigluRef(gate: Float32Array, up: Float32Array): Float32Array {
  const out = new Float32Array(gate.length);
  for (let i = 0; i < gate.length; i++) out[i] = gate[i] * sigmoid(gate[i]) * up[i];
  return out;
}

/** Gradients of sum(grad * out) for gate and up. */
export function swigluBackwardRef(
  gate: Float32Array,
  up: Float32Array,
  grad: Float32Array,
): { dGate: Float32Array; dUp: Float32Array } {
  const dGate = new Float32Array(gate.length);
  const dUp = new Float32Array(gate.length);
  for (let i = 0; i < gate.length; i++) {
    const g = gate[i], s = sigmoid(g);
    dUp[i] = grad[i] * g * s;
    // d/dg [g * s(g)] = s + g * s * (1 - s)
    dGate[i] = grad[i] * up[i] * s * (1 + g * (1 - s));
  }
  return { dGate, dUp };
}
