/**
 * Reductions: sum, mean and max over any axes, and sumTo (the gradient of a broadcast). One
 * workgroup reduces one output element, or a chunk of it when there are few outputs and long
 * reductions (then a second pass combines the chunks).
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { record, registerOp } from "../autograd.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { zeros } from "./basic.ts";
import { broadcastShapes, broadcastTo } from "./elementwise.ts";
import { grid1d } from "./grid.ts";

const MAX_RANK = 8;
const OP = { sum: 0, max: 1 } as const;
/** Reductions longer than this with fewer outputs than SPLIT_OUTPUTS are split into chunks. */
const SPLIT_LENGTH = 8192;
const SPLIT_OUTPUTS = 1024;
const CHUNK = 4096;
const MAX_CHUNKS = 1024;

export interface ReduceOptions {
  /** Axis or axes to reduce (negative counts from the end); all when omitted. */
  axis?: number | number[];
  /** Keep reduced axes as size 1. */
  keepDims?: boolean;
}

interface Plan {
  keepShape: number[];
  outCount: number;
  redCount: number;
  out: { dims: number[]; strides: number[] };
  red: { dims: number[]; strides: number[] };
}

function normAxes(op: string, x: Tensor, axis: number | number[] | undefined): number[] {
  const rank = x.shape.length;
  if (axis === undefined) return [...Array(rank).keys()];
  const list = typeof axis === "number" ? [axis] : axis;
  const out = new Set<number>();
  for (const a of list) {
    if (!Number.isInteger(a) || a < -rank || a >= rank) {
      throw new Error(`${op}: axis ${a} is out of range for ${fmtShape(x.shape)} ${x.dtype}`);
    }
    out.add(a < 0 ? a + rank : a);
  }
  return [...out].sort((a, b) => a - b);
}

function requireF32(op: string, x: Tensor): void {
  if (x.dtype !== "f32") {
    throw new Error(`${op}: expected f32, got ${fmtShape(x.shape)} ${x.dtype}`);
  }
}

/** Splits dims into kept and reduced blocks, merging neighbours of the same kind. */
function plan(shape: readonly number[], axes: number[]): Plan {
  const out = { dims: [] as number[], strides: [] as number[] };
  const red = { dims: [] as number[], strides: [] as number[] };
  let stride = 1;
  let lastKind: typeof out | null = null;
  for (let i = shape.length - 1; i >= 0; i--) {
    const size = shape[i];
    const kind = axes.includes(i) ? red : out;
    if (size !== 1) {
      // Walking inner to outer: a dim right outside a block of its own kind extends it.
      if (lastKind === kind) kind.dims[0] *= size;
      else {
        kind.dims.unshift(size);
        kind.strides.unshift(stride);
      }
      lastKind = kind;
    }
    stride *= size;
  }
  if (out.dims.length > MAX_RANK || red.dims.length > MAX_RANK) {
    throw new Error(`reduce: ${fmtShape(shape)} over axes [${axes}] needs over ${MAX_RANK} dims`);
  }
  const prod = (v: number[]) => v.reduce((a, b) => a * b, 1);
  return {
    keepShape: shape.map((d, i) => axes.includes(i) ? 1 : d),
    outCount: prod(out.dims),
    redCount: prod(red.dims),
    out,
    red,
  };
}

function params(p: Plan, chunk: number, k: number, scale: number): ArrayBuffer {
  const pad = (v: number[]) => [...v, ...new Array(MAX_RANK - v.length).fill(0)];
  return packParams([
    p.outCount,
    p.redCount,
    chunk,
    k,
    { f32: scale },
    p.out.dims.length,
    p.red.dims.length,
    { f32: -Infinity },
    ...pad(p.out.dims),
    ...pad(p.out.strides),
    ...pad(p.red.dims),
    ...pad(p.red.strides),
  ]);
}

/** Runs the reduction into a new tensor of `shape` (outCount elements). */
function reduceInto(x: Tensor, p: Plan, op: 0 | 1, scale: number, shape: number[]): Tensor {
  const out = Tensor.empty(shape, "f32", op === OP.sum ? "sum" : "max");
  const spec = { shader: "reduce", entry: "reduce_main", defines: { OP: op } };
  const split = p.outCount < SPLIT_OUTPUTS && p.redCount > SPLIT_LENGTH;
  if (!split) {
    gpu().dispatch(spec, {
      params: params(p, Math.max(p.redCount, 1), 1, scale),
      buffers: [x.buffer, out.buffer],
      workgroups: grid1d(p.outCount, 1),
    });
    return out;
  }
  const k = Math.min(MAX_CHUNKS, Math.ceil(p.redCount / CHUNK));
  const chunk = Math.ceil(p.redCount / k);
  const partial = Tensor.empty([p.outCount, k], "f32", "reduce.partial");
  gpu().dispatch(spec, {
    params: params(p, chunk, k, 1),
    buffers: [x.buffer, partial.buffer],
    workgroups: grid1d(p.outCount * k, 1),
  });
  gpu().dispatch(spec, {
    params: params(plan([p.outCount, k], [1]), k, 1, scale),
    buffers: [partial.buffer, out.buffer],
    workgroups: grid1d(p.outCount, 1),
  });
  partial.dispose(); // safe: the queue runs the second pass before the buffer is reused
  return out;
}

function reduce(name: "sum" | "mean" | "max", x: Tensor, options: ReduceOptions): Tensor {
  requireF32(name, x);
  const axes = normAxes(name, x, options.axis);
  const p = plan(x.shape, axes);
  const shape = options.keepDims ? p.keepShape : x.shape.filter((_, i) => !axes.includes(i));
  const scale = name === "mean" ? 1 / p.redCount : 1;
  const out = reduceInto(x, p, name === "max" ? OP.max : OP.sum, scale, shape);
  return record(name, [x], out, (g) => {
    if (name !== "max") {
      const gk = g.reshape(p.keepShape);
      const dx = broadcastTo(gk, x.shape, { scale });
      gk.dispose();
      return [dx];
    }
    const dx = zeros(x.shape, "max.grad");
    gpu().dispatch({ shader: "reduce", entry: "max_grad_main", defines: { OP: OP.max } }, {
      params: params(p, p.redCount, 1, 1),
      buffers: [x.buffer, g.buffer, dx.buffer],
      workgroups: grid1d(p.outCount, 1),
    });
    return [dx];
  });
}

/** Sum over `axis` (all axes when omitted: shape []). */
export function sum(x: Tensor, options: ReduceOptions = {}): Tensor {
  return reduce("sum", x, options);
}

/** Mean over `axis` (all axes when omitted). */
export function mean(x: Tensor, options: ReduceOptions = {}): Tensor {
  return reduce("mean", x, options);
}

/** Maximum over `axis`; the gradient goes to the first maximum of each reduced slice. */
export function max(x: Tensor, options: ReduceOptions = {}): Tensor {
  return reduce("max", x, options);
}

/**
 * Sums x down to `shape`, which must broadcast to x's shape: the gradient of a broadcast. Returns
 * x itself when the shapes are equal.
 */
export function sumTo(x: Tensor, shape: readonly number[]): Tensor {
  requireF32("sumTo", x);
  const full = (() => {
    try {
      return broadcastShapes("sumTo", shape, x.shape);
    } catch {
      return null;
    }
  })();
  if (!full || full.length !== x.shape.length || full.some((d, i) => d !== x.shape[i])) {
    throw new Error(
      `sumTo: ${fmtShape(x.shape)} ${x.dtype} cannot be summed to ${fmtShape(shape)}`,
    );
  }
  if (shape.length === x.shape.length && shape.every((d, i) => d === x.shape[i])) return x;
  const lead = x.shape.length - shape.length;
  const axes = x.shape.map((_, i) => i).filter((i) => i < lead || shape[i - lead] === 1);
  const out = reduceInto(x, plan(x.shape, axes), OP.sum, 1, [...shape]);
  return record("sumTo", [x], out, (g) => [broadcastTo(g, x.shape)]);
}

registerOp("sum", "sum(x, { axis, keepDims })");
registerOp("mean", "mean(x, { axis, keepDims })");
registerOp("max", "max(x, { axis, keepDims }); gradient to the first maximum");
registerOp("sumTo", "sumTo(x, shape): sum over broadcast dims");
