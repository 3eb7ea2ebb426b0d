import { gpu, packParams } from "../../gpu/mod.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";

const WG = 256; // invocations per workgroup of basic.wgsl and axpy.wgsl

function requireF32(op: string, ...ts: Tensor[]): void {
  for (const t of ts) {
    if (t.dtype !== "f32") throw new Error(`${op}: expected f32, got ${t.dtype} for ${t}`);
  }
}

/** A new f32 tensor filled with `value`. */
export function fill(shape: readonly number[], value: number, label = "fill"): Tensor {
  const out = Tensor.empty(shape, "f32", label);
  dispatchFill(out, value); // its first values, not a write (version 0, as Tensor.from)
  return out;
}

export function zeros(shape: readonly number[], label = "zeros"): Tensor {
  return fill(shape, 0, label);
}

export function fillInPlace(t: Tensor, value: number): void {
  dispatchFill(t, value);
  t.markWritten();
}

function dispatchFill(t: Tensor, value: number): void {
  requireF32("fill", t);
  gpu().dispatch({ shader: "basic", entry: "fill", defines: { WG } }, {
    params: packParams([t.size, { f32: value }]),
    buffers: [t.buffer],
    workgroups: grid1d(t.size, WG),
  });
}

/** t *= a, in place. */
export function scaleInPlace(t: Tensor, a: number): void {
  requireF32("scale", t);
  t.markWritten();
  gpu().dispatch({ shader: "basic", entry: "scale", defines: { WG } }, {
    params: packParams([t.size, { f32: a }]),
    buffers: [t.buffer],
    workgroups: grid1d(t.size, WG),
  });
}

/** y += a * x, in place (same element count). */
export function accumulate(y: Tensor, x: Tensor, a = 1): void {
  requireF32("accumulate", x, y);
  if (x.size !== y.size) {
    throw new Error(`accumulate: sizes differ, ${fmtShape(y.shape)} += ${fmtShape(x.shape)}`);
  }
  y.markWritten();
  gpu().dispatch({ shader: "axpy", defines: { WG } }, {
    params: packParams([y.size, { f32: a }]),
    buffers: [x.buffer, y.buffer],
    workgroups: grid1d(y.size, WG),
  });
}

/** A copy with its own buffer (any dtype). */
export function clone(t: Tensor, label = t.label): Tensor {
  const out = Tensor.empty(t.shape, t.dtype, label);
  const bytes = Math.ceil(t.byteSize / 4) * 4;
  if (bytes > 0) gpu().copy(t.buffer, 0, out.buffer, 0, bytes);
  return out;
}
