import { gpu, packParams, type Params } from "../../gpu/mod.ts";
import { record, registerOp } from "../autograd.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { grid1d, rowDefines } from "./grid.ts";
import { colsum } from "./colsum.ts";

const WG = 256;
const CHUNK_ROWS = 32; // rows per partial sum of the weight gradient
const MAX_CHUNKS = 1024;

registerOp(
  "rms_norm",
  "x [..., C], weight [C] -> x * rsqrt(mean(x^2) + eps) * weight (f32, Qwen2/Llama RMSNorm); " +
    "grads for x and weight",
);

export interface RmsNormOptions {
  /** Added to mean(x^2) before the rsqrt (HF `rms_norm_eps`). Default 1e-6. */
  eps?: number;
}

function check(x: Tensor, weight: Tensor): void {
  const C = x.shape.at(-1);
  if (x.dtype !== "f32" || weight.dtype !== "f32") {
    throw new Error(
      `rmsNorm: expected f32 x and weight, got x ${fmtShape(x.shape)} ${x.dtype}, ` +
        `weight ${fmtShape(weight.shape)} ${weight.dtype}`,
    );
  }
  if (x.rank < 1 || weight.rank !== 1 || weight.shape[0] !== C) {
    throw new Error(
      `rmsNorm: weight must be [C] with C the last dim of x, got x ${fmtShape(x.shape)} f32, ` +
        `weight ${fmtShape(weight.shape)} f32`,
    );
  }
}

function params(rows: number, cols: number, eps: number, chunk = 0): Params {
  return packParams([rows, cols, { f32: eps }, chunk, 0, 0, 0, 0]);
}

/**
 * RMSNorm over the last dim, as HF's Qwen2RMSNorm / LlamaRMSNorm computes it in f32. The per-row
 * rstd [rows] is kept for the backward; like the inputs it lives until the enclosing scope ends,
 * so run backward inside the scope that ran the forward.
 */
export function rmsNorm(x: Tensor, weight: Tensor, options: RmsNormOptions = {}): Tensor {
  check(x, weight);
  const eps = options.eps ?? 1e-6;
  const C = weight.shape[0];
  const rows = C === 0 ? 0 : x.size / C;
  const y = Tensor.empty(x.shape, "f32", "rms_norm");
  const rstd = Tensor.empty([rows], "f32", "rms_norm.rstd");
  if (rows > 0) {
    gpu().dispatch({ shader: "rmsnorm", entry: "forward", defines: rowDefines(C) }, {
      params: params(rows, C, eps),
      buffers: [x.buffer, weight.buffer, y.buffer, rstd.buffer],
      workgroups: grid1d(rows, 1),
    });
  }
  const out = record("rms_norm", [x, weight], y, (gy) => {
    const gx = x.requiresGrad ? rmsNormBackwardX(x, weight, rstd, gy, eps) : null;
    const gw = weight.requiresGrad ? rmsNormBackwardWeight(x, rstd, gy) : null;
    rstd.dispose();
    return [gx, gw];
  });
  if (!out.node) rstd.dispose();
  return out;
}

function rmsNormBackwardX(x: Tensor, w: Tensor, rstd: Tensor, gy: Tensor, eps: number): Tensor {
  const C = w.shape[0];
  const rows = rstd.size;
  const gx = Tensor.empty(x.shape, "f32", "rms_norm.gx");
  if (rows > 0) {
    gpu().dispatch({ shader: "rmsnorm", entry: "backward_x", defines: rowDefines(C) }, {
      params: params(rows, C, eps),
      buffers: [x.buffer, w.buffer, rstd.buffer, gy.buffer, gx.buffer],
      workgroups: grid1d(rows, 1),
    });
  }
  return gx;
}

/**
 * Sum over rows of gy * x * rstd, in two deterministic passes: per-chunk partial sums, then their
 * column sums (`colsum`, whose thread rows walk the chunks in parallel).
 */
function rmsNormBackwardWeight(x: Tensor, rstd: Tensor, gy: Tensor): Tensor {
  const C = x.shape.at(-1)!;
  const rows = rstd.size;
  if (C === 0) return Tensor.empty([C], "f32", "rms_norm.gw");
  const nchunks = Math.max(1, Math.min(MAX_CHUNKS, Math.ceil(rows / CHUNK_ROWS)));
  const chunk = Math.ceil(rows / nchunks);
  const part = Tensor.empty([nchunks, C], "f32", "rms_norm.gw_part");
  gpu().dispatch({ shader: "rmsnorm", entry: "dw_partial", defines: { WG } }, {
    params: params(rows, C, 0, chunk),
    buffers: [x.buffer, gy.buffer, rstd.buffer, part.buffer],
    workgroups: [Math.ceil(C / WG), nchunks],
  });
  const gw = colsum(part, nchunks, C, [C]);
  part.dispose();
  return gw;
}
