/**
 * Kernel launches of the reduce family (shaders/reduce.wgsl), with no autograd: one workgroup
 * reduces one output element, or a chunk of it when there are few outputs and long reductions
 * (then a second pass combines the chunks). reduce.ts and broadcast.ts record backwards on top.
 */
import { gpu, packParams, type Params } from "../../gpu/mod.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { zeros } from "./basic.ts";
import { grid1d } from "./grid.ts";

const MAX_RANK = 8;
const WG = 256; // invocations reducing one output element (or chunk)
export const OP = { sum: 0, max: 1 } as const;
/** Reductions longer than this with fewer outputs than SPLIT_OUTPUTS are split into chunks. */
const SPLIT_LENGTH = 8192;
const SPLIT_OUTPUTS = 1024;
const CHUNK = 4096;
const MAX_CHUNKS = 1024;

/** Kept and reduced dims of one reduction, neighbours of the same kind merged. */
export interface Plan {
  keepShape: number[];
  outCount: number;
  redCount: number;
  out: { dims: number[]; strides: number[] };
  red: { dims: number[]; strides: number[] };
}

export function requireF32(op: string, x: Tensor): void {
  if (x.dtype !== "f32") {
    throw new Error(`${op}: expected f32, got ${fmtShape(x.shape)} ${x.dtype}`);
  }
}

/** Splits dims into kept and reduced blocks, merging neighbours of the same kind. */
export function plan(shape: readonly number[], axes: number[]): Plan {
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

function params(p: Plan, chunk: number, k: number, scale: number): Params {
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

/** Runs the reduction into a new tensor of `shape` (outCount elements), times `scale`. */
export function reduceInto(x: Tensor, p: Plan, op: 0 | 1, scale: number, shape: number[]): Tensor {
  const out = Tensor.empty(shape, "f32", op === OP.sum ? "sum" : "max");
  const spec = { shader: "reduce", entry: "reduce_main", defines: { OP: op, WG } };
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

/** The gradient of max: g at the first maximum of each reduced slice of x, zero elsewhere. */
export function maxGradKernel(x: Tensor, g: Tensor, p: Plan): Tensor {
  const dx = zeros(x.shape, "max.grad");
  gpu().dispatch({ shader: "reduce", entry: "max_grad_main", defines: { OP: OP.max, WG } }, {
    params: params(p, p.redCount, 1, 1),
    buffers: [x.buffer, g.buffer, dx.buffer],
    workgroups: grid1d(p.outCount, 1),
  });
  return dx;
}
