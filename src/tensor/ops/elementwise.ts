/**
 * Elementwise ops: numpy-broadcasting binary ops, scalar and unary ops, broadcastTo and cast.
 * Float ops run on f32, and on f16 where the device has `shader-f16`. Gradients of broadcast
 * inputs are summed back to the input's shape with `sumTo` (reduce family); unary gradients are
 * computed from the input, so no output is kept alive for the backward.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import type { KernelSpec } from "../../gpu/mod.ts";
import { record, registerOp } from "../autograd.ts";
import { type DType, fmtShape, Tensor } from "../tensor.ts";
import { clone } from "./basic.ts";
import { grid1d } from "./grid.ts";
import { sumTo } from "./reduce.ts";

const WG = 256;
const MAX_RANK = 8; // dims the shader can index after merging

const BINARY = { add: 0, sub: 1, mul: 2, div: 3, maximum: 4, minimum: 5 } as const;
type BinaryName = keyof typeof BINARY;

const UNARY = {
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
type UnaryName = keyof typeof UNARY;

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

/** numpy's broadcast of two shapes; throws naming the op and both shapes. */
export function broadcastShapes(
  op: string,
  a: readonly number[],
  b: readonly number[],
): number[] {
  const rank = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    const da = a[a.length - rank + i] ?? 1;
    const db = b[b.length - rank + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) {
      throw new Error(
        `${op}: shapes ${fmtShape(a)} and ${
          fmtShape(b)
        } do not broadcast (dim ${i}: ${da} vs ${db})`,
      );
    }
    out.push(da === 1 ? db : da);
  }
  return out;
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
): ArrayBuffer {
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
    defines: { ...defines, ...(f16 ? { T: "f16" } : {}) },
  } satisfies KernelSpec;
}

function binaryGrad(name: BinaryName, side: 0 | 1, g: Tensor, a: Tensor, b: Tensor): Tensor {
  const shape = side === 0 ? a.shape : b.shape;
  if (name === "add") return sumTo(g, shape);
  const full = Tensor.empty(g.shape, g.dtype, `${name}.grad`);
  gpu().dispatch(spec("binary_grad_main", g.dtype, { OP: BINARY[name], SIDE: side }), {
    params: broadcastParams(g.shape, a.shape, b.shape),
    buffers: [a.buffer, b.buffer, full.buffer, g.buffer],
    workgroups: grid1d(g.size, WG),
  });
  const r = sumTo(full, shape); // full itself when no dim was broadcast
  if (r !== full) full.dispose();
  return r;
}

function binary(name: BinaryName, a: Tensor, b: Tensor): Tensor {
  const dtype = floatDtype(name, a, b);
  const shape = broadcastShapes(name, a.shape, b.shape);
  const out = Tensor.empty(shape, dtype, name);
  gpu().dispatch(spec("binary_main", dtype, { OP: BINARY[name] }), {
    params: broadcastParams(shape, a.shape, b.shape),
    buffers: [a.buffer, b.buffer, out.buffer],
    workgroups: grid1d(out.size, WG),
  });
  return record(name, [a, b], out, (g) => [
    a.requiresGrad ? binaryGrad(name, 0, g, a, b) : null,
    b.requiresGrad ? binaryGrad(name, 1, g, a, b) : null,
  ]);
}

export const add = (a: Tensor, b: Tensor): Tensor => binary("add", a, b);
export const sub = (a: Tensor, b: Tensor): Tensor => binary("sub", a, b);
export const mul = (a: Tensor, b: Tensor): Tensor => binary("mul", a, b);
export const div = (a: Tensor, b: Tensor): Tensor => binary("div", a, b);
export const maximum = (a: Tensor, b: Tensor): Tensor => binary("maximum", a, b);
export const minimum = (a: Tensor, b: Tensor): Tensor => binary("minimum", a, b);

function unaryGrad(name: UnaryName, x: Tensor, g: Tensor, s: number): Tensor {
  const dx = Tensor.empty(x.shape, x.dtype, `${name}.grad`);
  gpu().dispatch(spec("unary_grad_main", x.dtype, { OP: UNARY[name] }), {
    params: packParams([x.size, { f32: s }]),
    buffers: [x.buffer, g.buffer, dx.buffer],
    workgroups: grid1d(x.size, WG),
  });
  return dx;
}

function unary(name: UnaryName, x: Tensor, s = 0): Tensor {
  const dtype = floatDtype(name, x);
  if (!Number.isFinite(s)) throw new Error(`${name}: scalar must be finite, got ${s}`);
  const out = Tensor.empty(x.shape, dtype, name);
  gpu().dispatch(spec("unary_main", dtype, { OP: UNARY[name] }), {
    params: packParams([x.size, { f32: s }]),
    buffers: [x.buffer, out.buffer],
    workgroups: grid1d(x.size, WG),
  });
  return record(name, [x], out, (g) => [unaryGrad(name, x, g, s)]);
}

export const neg = (x: Tensor): Tensor => unary("neg", x);
export const exp = (x: Tensor): Tensor => unary("exp", x);
export const log = (x: Tensor): Tensor => unary("log", x);
export const sqrt = (x: Tensor): Tensor => unary("sqrt", x);
export const rsqrt = (x: Tensor): Tensor => unary("rsqrt", x);
export const square = (x: Tensor): Tensor => unary("square", x);
export const abs = (x: Tensor): Tensor => unary("abs", x);
export const sigmoid = (x: Tensor): Tensor => unary("sigmoid", x);
export const silu = (x: Tensor): Tensor => unary("silu", x);
export const tanh = (x: Tensor): Tensor => unary("tanh", x);
export const relu = (x: Tensor): Tensor => unary("relu", x);
/** x + s. */
export const addScalar = (x: Tensor, s: number): Tensor => unary("addScalar", x, s);
/** x * s. */
export const mulScalar = (x: Tensor, s: number): Tensor => unary("mulScalar", x, s);
/** x ** p; integer p is exact in sign for negative x, other p need x >= 0. */
export const powScalar = (x: Tensor, p: number): Tensor => unary("powScalar", x, p);

/** x repeated along broadcast dims to `shape` (numpy rules); the gradient is summed back. */
export function broadcastTo(x: Tensor, shape: readonly number[], options: { scale?: number } = {}) {
  const dtype = floatDtype("broadcastTo", x);
  const fits = x.shape.length <= shape.length &&
    x.shape.every((d, i) => d === 1 || d === shape[shape.length - x.shape.length + i]);
  if (!fits) {
    throw new Error(`broadcastTo: ${fmtShape(x.shape)} cannot be broadcast to ${fmtShape(shape)}`);
  }
  const scale = options.scale ?? 1;
  const out = Tensor.empty(shape, dtype, "broadcastTo");
  gpu().dispatch(spec("expand_main", dtype), {
    params: broadcastParams(shape, x.shape, [], scale),
    buffers: [x.buffer, out.buffer],
    workgroups: grid1d(out.size, WG),
  });
  return record("broadcastTo", [x], out, (g) => {
    const r = sumTo(g, x.shape);
    if (scale === 1) return [r];
    const scaled = mulScalar(r, scale);
    if (r !== g) r.dispose();
    return [scaled];
  });
}

const CAST_TYPES: Partial<Record<DType, string>> = { f32: "f32", f16: "f16", i32: "i32" };

/** Converts between f32, f16 (with shader-f16) and i32; float->int truncates toward zero. */
export function cast(x: Tensor, dtype: DType): Tensor {
  const from = CAST_TYPES[x.dtype], to = CAST_TYPES[dtype];
  const f16 = x.dtype === "f16" || dtype === "f16";
  if (!from || !to || (f16 && !gpu().hasF16)) {
    throw new Error(
      `cast: cannot cast ${fmtShape(x.shape)} ${x.dtype} to ${dtype} (f32, i32, and f16 with ` +
        `shader-f16 only)`,
    );
  }
  if (x.dtype === dtype) return record("cast", [x], clone(x, "cast"), (g) => [g]);
  const out = Tensor.empty(x.shape, dtype, "cast");
  gpu().dispatch(
    { shader: "elementwise", entry: "cast_main", f16, defines: { TI: from, TO: to } },
    {
      params: packParams([x.size, { f32: 0 }]),
      buffers: [x.buffer, out.buffer],
      workgroups: grid1d(x.size, WG),
    },
  );
  const differentiable = x.dtype !== "i32" && dtype !== "i32";
  return differentiable ? record("cast", [x], out, (g) => [cast(g, x.dtype)]) : out;
}

for (const name of Object.keys(BINARY)) {
  registerOp(name, `${name}(a, b): elementwise with numpy broadcasting`);
}
for (const name of Object.keys(UNARY)) registerOp(name, `${name}: elementwise unary`);
registerOp("broadcastTo", "broadcastTo(x, shape): repeat along broadcast dims");
registerOp("cast", "cast(x, dtype): f32 / f16 / i32 conversion");
