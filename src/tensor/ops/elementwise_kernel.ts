/**
 * Kernel launches of the elementwise family (shaders/elementwise.wgsl), with no autograd: the
 * differentiable ops in elementwise.ts and broadcast.ts record their backwards on top of these,
 * and may use each other's launches inside a backward without importing each other.
 */
import { gpu, packParams, type Params } from "../../gpu/mod.ts";
import type { KernelSpec } from "../../gpu/mod.ts";
import { type DType, fmtShape, Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";

const WG = 256;
const MAX_RANK = 8; // dims the shader can index after merging

export const BINARY = { add: 0, sub: 1, mul: 2, div: 3, maximum: 4, minimum: 5 } as const;
export type BinaryName = keyof typeof BINARY;

export const UNARY = {
  neg: 0,
  exp: 1,
  log: 2,
  sqrt: 3,
  rsqrt: 4,
  square: 5,
  abs: 6,
  sigmoid: 7,
  silu: 8,
  tanh: 9,
  relu: 10,
  addScalar: 11,
  mulScalar: 12,
  powScalar: 13,
} as const;
export type UnaryName = keyof typeof UNARY;

function describe(ts: Tensor[]): string {
  return ts.map((t) => `${fmtShape(t.shape)} ${t.dtype}`).join(" and ");
}

/** The common float dtype of the inputs; throws naming the op, shapes and dtypes otherwise. */
export function floatDtype(op: string, ...ts: Tensor[]): DType {
  const dtype = ts[0].dtype;
  const ok = dtype === "f32" || (dtype === "f16" && gpu().hasF16);
  if (!ok || ts.some((t) => t.dtype !== dtype)) {
    throw new Error(
      `${op}: expected f32 inputs (or f16 where the device has shader-f16) of one dtype, got ` +
        describe(ts),
    );
  }
  return dtype;
}

/** Row-major strides of `from` seen through the broadcast `shape` (0 on broadcast dims). */
function stridesIn(from: readonly number[], shape: readonly number[]): number[] {
  const strides = new Array(shape.length).fill(0);
  let s = 1;
  for (let i = from.length - 1; i >= 0; i--) {
    const d = shape.length - from.length + i;
    strides[d] = from[i] === 1 ? 0 : s;
    s *= from[i];
  }
  return strides;
}

/** Uniform block of the broadcast entries: dims merged where both inputs allow it. */
function broadcastParams(
  shape: readonly number[],
  a: readonly number[],
  b: readonly number[],
  s = 0,
): Params {
  const n = shape.reduce((x, y) => x * y, 1);
  const sa = stridesIn(a, shape), sb = stridesIn(b, shape);
  const dims: number[] = [], da: number[] = [], db: number[] = [];
  shape.forEach((size, i) => {
    if (size === 1) return;
    const k = dims.length - 1;
    // Merge with the previous (outer) dim when both inputs step through it contiguously.
    if (k >= 0 && da[k] === sa[i] * size && db[k] === sb[i] * size) {
      dims[k] *= size;
      da[k] = sa[i];
      db[k] = sb[i];
    } else {
      dims.push(size);
      da.push(sa[i]);
      db.push(sb[i]);
    }
  });
  const same = dims.length <= 1 && (da[0] ?? 1) === 1 && (db[0] ?? 1) === 1;
  if (dims.length > MAX_RANK) {
    throw new Error(`broadcast of ${fmtShape(a)} and ${fmtShape(b)} needs over ${MAX_RANK} dims`);
  }
  const pad = (v: number[]) => [...v, ...new Array(MAX_RANK - v.length).fill(0)];
  return packParams([
    n,
    same ? 0 : dims.length,
    { f32: s },
    0,
    ...pad(dims),
    ...pad(da),
    ...pad(db),
  ]);
}

function spec(entry: string, dtype: DType, defines: Record<string, number | string> = {}) {
  const f16 = dtype === "f16";
  return {
    shader: "elementwise",
    entry,
    f16,
    defines: { ...defines, WG, ...(f16 ? { T: "f16" } : {}) },
  } satisfies KernelSpec;
}

/** a op b broadcast to `shape` (which the caller has checked). */
export function binaryKernel(name: BinaryName, a: Tensor, b: Tensor, shape: number[]): Tensor {
  const dtype = a.dtype;
  const out = Tensor.empty(shape, dtype, name);
  gpu().dispatch(spec("binary_main", dtype, { OP: BINARY[name] }), {
    params: broadcastParams(shape, a.shape, b.shape),
    buffers: [a.buffer, b.buffer, out.buffer],
    workgroups: grid1d(out.size, WG),
  });
  return out;
}

/** g * d(a op b)/d(side) at the output's resolution (not yet summed to the input's shape). */
export function binaryGradKernel(
  name: BinaryName,
  side: 0 | 1,
  g: Tensor,
  inputs: [Tensor, Tensor],
): Tensor {
  const [a, b] = inputs;
  const full = Tensor.empty(g.shape, g.dtype, `${name}.grad`);
  gpu().dispatch(spec("binary_grad_main", g.dtype, { OP: BINARY[name], SIDE: side }), {
    params: broadcastParams(g.shape, a.shape, b.shape),
    buffers: [a.buffer, b.buffer, full.buffer, g.buffer],
    workgroups: grid1d(g.size, WG),
  });
  return full;
}

/** op(x, s) elementwise, checking the dtype and the scalar. */
export function unaryKernel(name: UnaryName, x: Tensor, s = 0): Tensor {
  const dtype = floatDtype(name, x);
  if (!Number.isFinite(s)) throw new Error(`${name}: scalar must be finite, got ${s}`);
  const out = Tensor.empty(x.shape, dtype, name);
  gpu().dispatch(spec("unary_main", dtype, { OP: UNARY[name] }), {
    params: packParams([x.size, { f32: s }]),
    buffers: [x.buffer, out.buffer],
    workgroups: grid1d(x.size, WG),
  });
  return out;
}

/** g * d op(x, s)/dx, from the input alone. */
export function unaryGradKernel(name: UnaryName, x: Tensor, g: Tensor, s: number): Tensor {
  const dx = Tensor.empty(x.shape, x.dtype, `${name}.grad`);
  gpu().dispatch(spec("unary_grad_main", x.dtype, { OP: UNARY[name] }), {
    params: packParams([x.size, { f32: s }]),
    buffers: [x.buffer, g.buffer, dx.buffer],
    workgroups: grid1d(x.size, WG),
  });
  return dx;
}

/** scale * x repeated along the broadcast dims of `shape` (which the caller has checked). */
export function expandKernel(x: Tensor, shape: readonly number[], scale: number): Tensor {
  const out = Tensor.empty(shape, x.dtype, "broadcastTo");
  gpu().dispatch(spec("expand_main", x.dtype), {
    params: broadcastParams(shape, x.shape, [], scale),
    buffers: [x.buffer, out.buffer],
    workgroups: grid1d(out.size, WG),
  });
  return out;
}

/** x converted to `dtype` (WGSL type names of both given by the caller). */
export function castKernel(x: Tensor, dtype: DType, types: { from: string; to: string }): Tensor {
  const f16 = x.dtype === "f16" || dtype === "f16";
  const out = Tensor.empty(x.shape, dtype, "cast");
  gpu().dispatch(
    {
      shader: "elementwise",
      entry: "cast_main",
      f16,
      defines: { WG, TI: types.from, TO: types.to, HALF_OUT: x.dtype === "f32" && dtype === "f16" },
    },
    {
      params: packParams([x.size, { f32: Infinity }]),
      buffers: [x.buffer, out.buffer],
      workgroups: grid1d(x.size, WG),
    },
  );
  return out;
}

/** An f16 copy of an f32 tensor, off the tape (NaN and out-of-range values become NaN / inf). */
export function toF16(t: Tensor): Tensor {
  return castKernel(t, "f16", { from: "f32", to: "f16" });
}
