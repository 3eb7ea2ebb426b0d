/**
 * Inverted dropout (shaders/dropout.wgsl): y = x * mask / (1 - p) with a mask drawn from a seed by
 * a counter-based hash, so the backward re-draws it instead of storing it. p = 0 is the identity.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { record, registerOp } from "../autograd.ts";
import { dropThreshold } from "../ref/dropout.ts";
import { Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";

const WG = 256;

registerOp(
  "dropout",
  "y = x * mask / (1 - p), x f32 of any shape; the mask is a pure function of (seed, index); " +
    "the gradient is the same op on dy",
);

function check(x: Tensor, p: number, seed: number): void {
  if (x.dtype !== "f32") throw new Error(`dropout: expected f32, got ${x.dtype} for ${x}`);
  if (!(p >= 0 && p < 1)) {
    throw new Error(`dropout: the drop probability must be in [0, 1), got ${p}`);
  }
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new Error(`dropout: the seed must be a u32, got ${seed}`);
  }
}

/** The masked copy of x, off the tape (the op and its backward both run this). */
export function dropoutMasked(x: Tensor, p: number, seed: number): Tensor {
  check(x, p, seed);
  const out = Tensor.empty(x.shape, "f32", "dropout");
  if (x.size === 0) return out;
  gpu().dispatch({ shader: "dropout", defines: { WG } }, {
    params: packParams([x.size, seed, dropThreshold(p), { f32: 1 / (1 - p) }]),
    buffers: [x.buffer, out.buffer],
    workgroups: grid1d(x.size, WG),
  });
  return out;
}

/** y = dropout(x) with drop probability p and mask `seed`; differentiable in x. */
export function dropout(x: Tensor, p: number, seed: number): Tensor {
  const out = dropoutMasked(x, p, seed);
  return record("dropout", [x], out, (g) => [dropoutMasked(g, p, seed)]);
}
