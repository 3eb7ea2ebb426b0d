import { gpu, packParams } from "../../gpu/mod.ts";
import { registerOp } from "../autograd.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";

const WG = 256;

registerOp(
  "unpack_halves",
  "x f16 (even size) -> the same values as f32 on any adapter (no shader-f16); no gradient",
);

/**
 * An f16 tensor of an even size (e.g. a KV cache of halves) as f32, same shape, on any adapter:
 * f16 tensors hold their halves two per 32-bit word, which WGSL unpacks without shader-f16.
 * Inference only (no gradient).
 */
export function unpackHalves(x: Tensor, label = "unpack_halves"): Tensor {
  if (x.dtype !== "f16" || x.size % 2 !== 0) {
    throw new Error(
      `unpackHalves: expected an f16 tensor of an even size, got ${fmtShape(x.shape)} ${x.dtype}`,
    );
  }
  const out = Tensor.empty(x.shape, "f32", label);
  const words = x.size / 2;
  if (words > 0) {
    gpu().dispatch({ shader: "unpack_halves", defines: { WG } }, {
      params: packParams([words]),
      buffers: [x.buffer, out.buffer],
      workgroups: grid1d(words, WG),
    });
  }
  return out;
}
