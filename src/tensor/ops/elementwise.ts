/**
 * Elementwise ops: numpy-broadcasting binary ops, scalar and unary ops, broadcastTo and cast.
 * Float ops run on f32, and on f16 where the device has `shader-f16`. Gradients of broadcast
 * inputs are summed back to the input's shape with `sumTo` (broadcast.ts); unary gradients are
 * computed from the input, so no output is kept alive for the backward.
 */
import { gpu } from "../../gpu/mod.ts";
import { record, registerOp } from "../autograd.ts";
import { type DType, fmtShape, type Tensor } from "../tensor.ts";
import { clone } from "./basic.ts";
import { broadcastShapes, sumTo } from "./broadcast.ts";
import {
  BINARY,
  binaryGradKernel,
  binaryKernel,
  type BinaryName,
  castKernel,
  floatDtype,
  UNARY,
  unaryGradKernel,
  unaryKernel,
  type UnaryName,
} from "./elementwise_kernel.ts";

export { broadcastShapes, broadcastTo } from "./broadcast.ts";
export { floatDtype } from "./elementwise_kernel.ts";

function binaryGrad(name: BinaryName, side: 0 | 1, g: Tensor, a: Tensor, b: Tensor): Tensor {
  const shape = side === 0 ? a.shape : b.shape;
  if (name === "add") return sumTo(g, shape);
  const full = binaryGradKernel(name, side, g, [a, b]);
  const r = sumTo(full, shape); // full itself when no dim was broadcast
  if (r !== full) full.dispose();
  return r;
}

function binary(name: BinaryName, a: Tensor, b: Tensor): Tensor {
  floatDtype(name, a, b);
  const shape = broadcastShapes(name, a.shape, b.shape);
  const out = binaryKernel(name, a, b, shape);
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

function unary(name: UnaryName, x: Tensor, s = 0): Tensor {
  const out = unaryKernel(name, x, s);
  return record(name, [x], out, (g) => [unaryGradKernel(name, x, g, s)]);
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
  const out = castKernel(x, dtype, { from, to });
  const differentiable = x.dtype !== "i32" && dtype !== "i32";
  // A gradient already in x's dtype (an f16 operand's f32 gradient from `linear`) passes through.
  const back = (g: Tensor) => [g.dtype === x.dtype ? g : cast(g, x.dtype)];
  return differentiable ? record("cast", [x], out, back) : out;
}

for (const name of Object.keys(BINARY)) {
  registerOp(name, `${name}(a, b): elementwise with numpy broadcasting`);
}
for (const name of Object.keys(UNARY)) registerOp(name, `${name}: elementwise unary`);
registerOp("cast", "cast(x, dtype): f32 / f16 / i32 conversion");
