/** CPU reference of the reduce family: sum / mean / max over axes, f64 accumulation. */
import { broadcastIndex, unravel } from "./elementwise.ts";

export type ReduceOp = "sum" | "mean" | "max";

/** Normalised, sorted axes (all when undefined). */
export function axesRef(rank: number, axis?: number | number[]): number[] {
  if (axis === undefined) return [...Array(rank).keys()];
  const list = typeof axis === "number" ? [axis] : axis;
  return [...new Set(list.map((a) => a < 0 ? a + rank : a))].sort((a, b) => a - b);
}

/**
 * Reduces x over `axes`; returns the data, the output shape (keepDims as asked) and, for max,
 * the flat input index of the first maximum of every output element.
 */
export function reduceRef(
  op: ReduceOp,
  x: ArrayLike<number>,
  shape: readonly number[],
  options: { axis?: number | number[]; keepDims?: boolean } = {},
): { data: Float64Array; shape: number[]; argmax: Int32Array } {
  const axes = axesRef(shape.length, options.axis);
  const keepShape = shape.map((d, i) => axes.includes(i) ? 1 : d);
  const outShape = options.keepDims ? keepShape : shape.filter((_, i) => !axes.includes(i));
  const m = keepShape.reduce((p, d) => p * d, 1);
  const n = shape.reduce((p, d) => p * d, 1);
  const acc = new Float64Array(m).fill(op === "max" ? -Infinity : 0);
  const argmax = new Int32Array(m).fill(-1);
  for (let i = 0; i < n; i++) {
    const o = broadcastIndex(unravel(i, shape), keepShape); // reduced coordinates become 0
    if (op === "max") {
      if (argmax[o] < 0 || x[i] > acc[o]) {
        acc[o] = x[i];
        argmax[o] = i;
      }
    } else acc[o] += x[i];
  }
  if (op === "mean") {
    const count = n / m;
    for (let o = 0; o < m; o++) acc[o] /= count;
  }
  return { data: acc, shape: outShape, argmax };
}

/** Gradient of max: g at the first maximum of each reduced slice, 0 elsewhere. */
export function maxGradRef(argmax: Int32Array, g: ArrayLike<number>, n: number): Float32Array {
  const dx = new Float32Array(n);
  for (let o = 0; o < argmax.length; o++) if (argmax[o] >= 0) dx[argmax[o]] = g[o];
  return dx;
}

/** Gradient of sum / mean: g spread over each reduced slice (divided by its length for mean). */
export function sumGradRef(
  op: "sum" | "mean",
  shape: readonly number[],
  g: ArrayLike<number>,
  options: { axis?: number | number[] } = {},
): Float64Array {
  const axes = axesRef(shape.length, options.axis);
  const keepShape = shape.map((d, i) => axes.includes(i) ? 1 : d);
  const n = shape.reduce((p, d) => p * d, 1);
  const count = n / keepShape.reduce((p, d) => p * d, 1);
  const dx = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const o = broadcastIndex(unravel(i, shape), keepShape);
    dx[i] = op === "mean" ? g[o] / count : g[o];
  }
  return dx;
}
