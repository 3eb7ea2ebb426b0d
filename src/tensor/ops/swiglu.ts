import { gpu, packParams } from "../../gpu/mod.ts";
import { record, registerOp } from "../autograd.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";

const WG = 256;

registerOp("swiglu", "gate [...], up [...] (same shape) -> silu(gate) * up; grads for both");

function check(gate: Tensor, up: Tensor): void {
  const desc = `gate ${fmtShape(gate.shape)} ${gate.dtype}, up ${fmtShape(up.shape)} ${up.dtype}`;
  if (gate.dtype !== "f32" || up.dtype !== "f32") {
    throw new Error(`swiglu: expected f32 gate and up, got ${desc}`);
  }
  if (gate.rank !== up.rank || gate.shape.some((d, i) => d !== up.shape[i])) {
    throw new Error(`swiglu: gate and up must have the same shape, got ${desc}`);
  }
}

/** The gated activation of a Qwen2/Llama MLP: silu(gate) * up, elementwise, in f32. */
export function swiglu(gate: Tensor, up: Tensor): Tensor {
  check(gate, up);
  const out = Tensor.empty(gate.shape, "f32", "swiglu");
  gpu().dispatch({ shader: "swiglu", entry: "forward", defines: { WG } }, {
    params: packParams([out.size]),
    buffers: [gate.buffer, up.buffer, out.buffer],
    workgroups: grid1d(out.size, WG),
  });
  return record("swiglu", [gate, up], out, (g) => {
    // One pass yields both gradients; the one no input needs is dropped right away.
    const dGate = Tensor.empty(gate.shape, "f32", "swiglu.d_gate");
    const dUp = Tensor.empty(up.shape, "f32", "swiglu.d_up");
    gpu().dispatch({ shader: "swiglu", entry: "backward", defines: { WG } }, {
      params: packParams([out.size]),
      buffers: [gate.buffer, up.buffer, g.buffer, dGate.buffer, dUp.buffer],
      workgroups: grid1d(out.size, WG),
    });
    if (!gate.requiresGrad) dGate.dispose();
    if (!up.requiresGrad) dUp.dispose();
    return [gate.requiresGrad ? dGate : null, up.requiresGrad ? dUp : null];
  });
}
