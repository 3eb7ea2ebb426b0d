/** Fused in-place AdamW step on one parameter tensor (see shaders/adamw.wgsl). */
import { gpu, packParams } from "../../gpu/mod.ts";
import { registerOp } from "../autograd.ts";
import { fmtShape, type Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";

const WG = 256;

registerOp("adamw", "in-place AdamW update (no autograd)");

export interface AdamWStepOptions {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  step: number; // 1-based, for bias correction
}

/** param, m, v updated in place; `clip` is the `[norm, scale]` tensor of `gradNormAndScale`. */
export function adamwStep(
  param: Tensor,
  grad: Tensor,
  m: Tensor,
  v: Tensor,
  clip: Tensor,
  o: AdamWStepOptions,
): void {
  for (const t of [param, grad, m, v, clip]) {
    if (t.dtype !== "f32") throw new Error(`adamw: ${t} must be f32`);
  }
  for (const t of [grad, m, v]) {
    if (t.size !== param.size) {
      throw new Error(
        `adamw: ${t.label} ${fmtShape(t.shape)} does not match param ${fmtShape(param.shape)}`,
      );
    }
  }
  if (clip.size < 2) throw new Error(`adamw: clip must hold [norm, scale], got ${clip}`);
  for (const t of [param, m, v]) t.markWritten();
  gpu().dispatch({ shader: "adamw", defines: { WG } }, {
    params: packParams([
      param.size,
      { f32: o.lr },
      { f32: o.beta1 },
      { f32: o.beta2 },
      { f32: o.eps },
      { f32: o.weightDecay },
      { f32: 1 - o.beta1 ** o.step },
      { f32: 1 - o.beta2 ** o.step },
    ]),
    buffers: [param.buffer, grad.buffer, m.buffer, v.buffer, clip.buffer],
    workgroups: grid1d(param.size, WG),
  });
}
