/**
 * The adjoint pair broadcastTo / sumTo: each one's backward is the other, so they share a file;
 * elementwise.ts (binary gradients are summed back with sumTo) and reduce.ts (sum and mean
 * gradients are broadcast) both import it, and it imports only kernel launches.
 */
import { record, registerOp } from "../autograd.ts";
import { fmtShape, type Tensor } from "../tensor.ts";
import { expandKernel, floatDtype, unaryKernel } from "./elementwise_kernel.ts";
import { OP, plan, reduceInto, requireF32 } from "./reduce_kernel.ts";

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

/** x repeated along broadcast dims to `shape` (numpy rules); the gradient is summed back. */
export function broadcastTo(x: Tensor, shape: readonly number[], options: { scale?: number } = {}) {
  floatDtype("broadcastTo", x);
  const fits = x.shape.length <= shape.length &&
    x.shape.every((d, i) => d === 1 || d === shape[shape.length - x.shape.length + i]);
  if (!fits) {
    throw new Error(`broadcastTo: ${fmtShape(x.shape)} cannot be broadcast to ${fmtShape(shape)}`);
  }
  const scale = options.scale ?? 1;
  const out = expandKernel(x, shape, scale);
  return record("broadcastTo", [x], out, (g) => {
    const r = sumTo(g, x.shape);
    if (scale === 1) return [r];
    // The tape is off inside a backward, so the plain launch is what mulScalar would run.
    const scaled = unaryKernel("mulScalar", r, scale);
    if (r !== g) r.dispose();
    return [scaled];
  });
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

registerOp("broadcastTo", "broadcastTo(x, shape): repeat along broadcast dims");
registerOp("sumTo", "sumTo(x, shape): sum over broadcast dims");
