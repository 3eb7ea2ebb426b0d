/**
 * Reductions: sum, mean and max over any axes. The launches live in reduce_kernel.ts; sumTo (the
 * gradient of a broadcast) lives with broadcastTo in broadcast.ts and is re-exported here.
 */
import { record, registerOp } from "../autograd.ts";
import { fmtShape, type Tensor } from "../tensor.ts";
import { broadcastTo } from "./broadcast.ts";
import { maxGradKernel, OP, plan, reduceInto, requireF32 } from "./reduce_kernel.ts";

export { sumTo } from "./broadcast.ts";

export interface ReduceOptions {
  /** Axis or axes to reduce (negative counts from the end); all when omitted. */
  axis?: number | number[];
  /** Keep reduced axes as size 1. */
  keepDims?: boolean;
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

function reduce(name: "sum" | "mean" | "max", x: Tensor, options: ReduceOptions): Tensor {
  requireF32(name, x);
  const axes = normAxes(name, x, options.axis);
  const p = plan(x.shape, axes);
  const shape = options.keepDims ? p.keepShape : x.shape.filter((_, i) => !axes.includes(i));
  const scale = name === "mean" ? 1 / p.redCount : 1;
  const out = reduceInto(x, p, name === "max" ? OP.max : OP.sum, scale, shape);
  return record(name, [x], out, (g) => {
    if (name === "max") return [maxGradKernel(x, g, p)];
    const gk = g.reshape(p.keepShape);
    const dx = broadcastTo(gk, x.shape, { scale });
    gk.dispose();
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

registerOp("sum", "sum(x, { axis, keepDims })");
registerOp("mean", "mean(x, { axis, keepDims })");
registerOp("max", "max(x, { axis, keepDims }); gradient to the first maximum");
