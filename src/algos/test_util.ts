/**
 * Assertion helpers for the algos tests (numeric closeness, PRNG data).
 *
 * @module
 */

import { finiteDiff as sharedFiniteDiff } from "../testing/mod.ts";

import assert from "node:assert/strict";

/** Asserts |a - e| <= tol·max(1, |e|) element-wise, with a readable message. */
export function assertClose(
  actual: ArrayLike<number> | number,
  expected: ArrayLike<number> | number,
  tol = 1e-6,
  what = "value",
): void {
  const a = typeof actual === "number" ? [actual] : Array.from(actual);
  const e = typeof expected === "number" ? [expected] : Array.from(expected);
  assert.equal(a.length, e.length, `${what}: length ${a.length} != ${e.length}`);
  for (let i = 0; i < a.length; i++) {
    const ok = Math.abs(a[i] - e[i]) <= tol * Math.max(1, Math.abs(e[i]));
    assert.ok(
      ok,
      `${what}[${i}]: got ${a[i]}, expected ${e[i]} (tol ${tol})\n  got ${a}\n  exp ${e}`,
    );
  }
}

/** Asserts no element is NaN or infinite. */
export function assertFinite(x: ArrayLike<number>, what = "value"): void {
  for (let i = 0; i < x.length; i++) assert.ok(Number.isFinite(x[i]), `${what}[${i}] = ${x[i]}`);
}

export { rng } from "../testing/mod.ts";

/** Central finite differences (f64); the shared helper, with the step size these tests use. */
export function finiteDiff(
  f: (x: Float64Array) => number,
  x: Float64Array,
  h = 1e-6,
): Float64Array {
  return sharedFiniteDiff(f, x, h);
}

/** Σ x_i of any numeric array. */
export function sum(x: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i];
  return s;
}

/**
 * A hand-checkable batch of two rows of two tokens: old log-probs -1, tokens 0..2 at probability
 * ratios `ratios` (log-prob = ln r - 1), token 3 padding; advantages 1, -2, 0.5.
 */
export function ratioBatch(ratios: readonly [number, number, number]) {
  const lp = ratios.map((r) => Math.log(r) - 1);
  return {
    lp,
    advantages: [1, -2, 0.5],
    inputs: {
      R: 2,
      oldLogProb: new Float64Array([-1, -1, -1, -1]),
      logProb: new Float64Array([...lp, NaN]),
      advantages: new Float64Array([1, -2, 0.5, NaN]),
      responseMask: new Float32Array([1, 1, 1, 0]),
    },
  };
}
