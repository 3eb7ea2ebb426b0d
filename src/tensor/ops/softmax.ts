/**
 * Softmax and log-softmax over the last axis (f32). One workgroup per row, streaming the row, so
 * vocabulary-wide rows work. The backward reads the forward output, which therefore has to stay
 * alive (not disposed) until backward has run, like every input on the tape.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { record, registerOp } from "../autograd.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";

function rowsOf(op: string, x: Tensor): { rows: number; cols: number } {
  if (x.dtype !== "f32" || x.shape.length === 0) {
    throw new Error(
      `${op}: expected an f32 tensor of rank >= 1, got ${fmtShape(x.shape)} ${x.dtype}`,
    );
  }
  const cols = x.shape[x.shape.length - 1];
  return { rows: cols === 0 ? 0 : x.size / cols, cols };
}

const WG = 256; // invocations per row

function run(name: "softmax" | "logSoftmax", x: Tensor): Tensor {
  const { rows, cols } = rowsOf(name, x);
  const log = name === "logSoftmax";
  const out = Tensor.empty(x.shape, "f32", name);
  const params = packParams([rows, cols, { f32: -Infinity }]);
  const entry = log ? "log_softmax_main" : "softmax_main";
  gpu().dispatch({ shader: "softmax", entry, defines: { WG } }, {
    params,
    buffers: [x.buffer, out.buffer],
    workgroups: grid1d(rows, 1),
  });
  return record(name, [x], out, (g) => {
    const dx = Tensor.empty(x.shape, "f32", `${name}.grad`);
    const gradEntry = log ? "log_softmax_grad_main" : "softmax_grad_main";
    gpu().dispatch({ shader: "softmax", entry: gradEntry, defines: { WG } }, {
      params,
      buffers: [out.buffer, g.buffer, dx.buffer],
      workgroups: grid1d(rows, 1),
    });
    return [dx];
  });
}

/** exp(x) / sum(exp(x)) over the last axis, computed with the row maximum subtracted. */
export function softmax(x: Tensor): Tensor {
  return run("softmax", x);
}

/** x - logsumexp(x) over the last axis. */
export function logSoftmax(x: Tensor): Tensor {
  return run("logSoftmax", x);
}

registerOp("softmax", "softmax(x) over the last axis");
registerOp("logSoftmax", "logSoftmax(x) over the last axis");
