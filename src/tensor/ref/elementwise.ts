/**
 * CPU reference of the elementwise family: plain loops in f64 over Float32Array data, used by the
 * tests to check the GPU kernels.
 */

export type BinaryOp = "add" | "sub" | "mul" | "div" | "maximum" | "minimum";
export type UnaryOp =
  | "neg"
  | "exp"
  | "log"
  | "sqrt"
  | "rsqrt"
  | "square"
  | "abs"
  | "sigmoid"
  | "silu"
  | "tanh"
  | "relu"
  | "addScalar"
  | "mulScalar"
  | "powScalar";

/** numpy broadcasting of two shapes (throws when they do not broadcast). */
export function broadcastShapeRef(a: readonly number[], b: readonly number[]): number[] {
  const rank = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    const da = a[a.length - rank + i] ?? 1;
    const db = b[b.length - rank + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) throw new Error(`no broadcast: [${a}] vs [${b}]`);
    out.push(Math.max(da, db));
  }
  return out;
}

/** Flat index into a tensor of shape `from` for the multi-index `idx` of the broadcast shape. */
export function broadcastIndex(idx: number[], from: readonly number[]): number {
  const lead = idx.length - from.length;
  let flat = 0;
  for (let d = 0; d < from.length; d++) {
    const c = from[d] === 1 ? 0 : idx[lead + d];
    flat = flat * from[d] + c;
  }
  return flat;
}

/** Multi-index of flat position i in `shape` (row-major). */
export function unravel(i: number, shape: readonly number[]): number[] {
  const idx = new Array(shape.length).fill(0);
  for (let d = shape.length - 1; d >= 0; d--) {
    idx[d] = i % shape[d];
    i = Math.floor(i / shape[d]);
  }
  return idx;
}

export function binaryScalarRef(op: BinaryOp, x: number, z: number): number {
  switch (op) {
    case "add":
      return x + z;
    case "sub":
      return x - z;
    case "mul":
      return x * z;
    case "div":
      return x / z;
    case "maximum":
      return x >= z ? x : z;
    case "minimum":
      return x <= z ? x : z;
  }
}

/** out = op(a, b) with broadcasting; returns the data and the broadcast shape. */
export function binaryRef(
  op: BinaryOp,
  a: ArrayLike<number>,
  aShape: readonly number[],
  b: ArrayLike<number>,
  bShape: readonly number[],
): { data: Float64Array; shape: number[] } {
  const shape = broadcastShapeRef(aShape, bShape);
  const n = shape.reduce((p, d) => p * d, 1);
  const data = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const idx = unravel(i, shape);
    data[i] = binaryScalarRef(op, a[broadcastIndex(idx, aShape)], b[broadcastIndex(idx, bShape)]);
  }
  return { data, shape };
}

/** Sums `x` of shape `from` down to `shape` (the reverse of broadcasting). */
export function sumToRef(
  x: ArrayLike<number>,
  from: readonly number[],
  shape: readonly number[],
): Float64Array {
  const out = new Float64Array(shape.reduce((p, d) => p * d, 1));
  const n = from.reduce((p, d) => p * d, 1);
  for (let i = 0; i < n; i++) out[broadcastIndex(unravel(i, from), shape)] += x[i];
  return out;
}

function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

export function unaryScalarRef(op: UnaryOp, x: number, s = 0): number {
  switch (op) {
    case "neg":
      return -x;
    case "exp":
      return Math.exp(x);
    case "log":
      return Math.log(x);
    case "sqrt":
      return Math.sqrt(x);
    case "rsqrt":
      return 1 / Math.sqrt(x);
    case "square":
      return x * x;
    case "abs":
      return Math.abs(x);
    case "sigmoid":
      return sigmoid(x);
    case "silu":
      return x * sigmoid(x);
    case "tanh":
      return Math.tanh(x);
    case "relu":
      return Math.max(x, 0);
    case "addScalar":
      return x + s;
    case "mulScalar":
      return x * s;
    case "powScalar":
      return x ** s;
  }
}

export function unaryRef(op: UnaryOp, x: ArrayLike<number>, s = 0): Float64Array {
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = unaryScalarRef(op, x[i], s);
  return out;
}
