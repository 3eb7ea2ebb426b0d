/** CPU reference of SwiGLU: out = silu(gate) * up elementwise, silu(g) = g / (1 + exp(-g)). */
import { linear } from "./matmul.ts";

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

/**
 * silu(x Wg^T + bg) * (x Wu^T + bu) for x [M, K], Wg and Wu [N, K], biases [N] or null: what
 * shaders/matmul_skinny_swiglu.wgsl computes in one pass.
 */
export function swigluLinearRef(
  x: ArrayLike<number>,
  w: { gate: ArrayLike<number>; up: ArrayLike<number> },
  d: { m: number; n: number; k: number; biasGate?: ArrayLike<number>; biasUp?: ArrayLike<number> },
): Float32Array {
  const gate = linear(x, w.gate, d.biasGate ?? null, d.m, d.k, d.n);
  const up = linear(x, w.up, d.biasUp ?? null, d.m, d.k, d.n);
  return swigluRef(gate, up);
}
