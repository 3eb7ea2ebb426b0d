import { gpu, packParams } from "../../gpu/mod.ts";
import { record, registerOp } from "../autograd.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";

const WG = 256;

registerOp(
  "rope",
  "x [B, T, H, D], positions i32 [B, T] -> rotary embedding with HF's rotate_half pairing " +
    "(i, i + D/2), inv_freq = theta^(-2i/D); grad for x (rotation by the negative angle)",
);

export interface RopeOptions {
  /** Base of the inverse frequencies (HF `rope_theta`, 10000 for Llama 2, 1e6 for Qwen2). */
  theta: number;
  /**
   * Precomputed inverse frequencies [D/2] overriding theta's (HF rope_scaling variants such as
   * llama3 or linear compute their own inv_freq).
   */
  invFreq?: Float32Array;
}

/** HF's inv_freq in f32: 1 / theta^(2i / D), each step rounded to f32 as torch does it. */
export function ropeInvFreq(theta: number, D: number): Float32Array {
  const out = new Float32Array(D / 2);
  for (let i = 0; i < D / 2; i++) {
    out[i] = 1 / Math.fround(Math.pow(Math.fround(theta), Math.fround((2 * i) / D)));
  }
  return out;
}

// Uploaded once per (theta, D) and kept for the life of the process: a few hundred bytes each.
const invFreqCache = new Map<string, Tensor>();

function invFreqTensor(D: number, options: RopeOptions): Tensor {
  if (options.invFreq) {
    if (options.invFreq.length !== D / 2) {
      throw new Error(
        `rope: invFreq has ${options.invFreq.length} values, expected D/2 = ${D / 2}`,
      );
    }
    return Tensor.from(options.invFreq, [D / 2], "f32", "rope.inv_freq");
  }
  const key = `${options.theta}:${D}`;
  let t = invFreqCache.get(key);
  if (!t || t.disposed) {
    t = Tensor.from(ropeInvFreq(options.theta, D), [D / 2], "f32", "rope.inv_freq").keep();
    invFreqCache.set(key, t);
  }
  return t;
}

function check(x: Tensor, positions: Tensor, options: RopeOptions): void {
  const desc = `x ${fmtShape(x.shape)} ${x.dtype}, positions ${fmtShape(positions.shape)} ` +
    positions.dtype;
  if (x.dtype !== "f32" || positions.dtype !== "i32") {
    throw new Error(`rope: expected f32 x and i32 positions, got ${desc}`);
  }
  if (x.rank !== 4 || x.shape[3] % 2 !== 0) {
    throw new Error(`rope: x must be [B, T, H, D] with D even, got ${desc}`);
  }
  if (
    positions.rank !== 2 || positions.shape[0] !== x.shape[0] || positions.shape[1] !== x.shape[1]
  ) {
    throw new Error(`rope: positions must be [B, T] matching x [B, T, H, D], got ${desc}`);
  }
  if (!options.invFreq && !(options.theta > 0)) {
    throw new Error(`rope: theta must be a positive number, got ${options.theta}`);
  }
}

function rotate(x: Tensor, positions: Tensor, invFreq: Tensor, sign: number): Tensor {
  const [, , H, D] = x.shape;
  const out = Tensor.empty(x.shape, "f32", "rope");
  const n = x.size / 2;
  if (n > 0) {
    gpu().dispatch({ shader: "rope", defines: { WG } }, {
      params: packParams([n, H, D / 2, { f32: sign }]),
      buffers: [x.buffer, positions.buffer, invFreq.buffer, out.buffer],
      workgroups: grid1d(n, WG),
    });
  }
  return out;
}

/**
 * Rotary embedding of q or k [B, T, H, D] at integer positions [B, T] (per row, so left-padded
 * prompts and KV-cache decoding with T = 1 at each sequence's own position both work). Angles
 * are formed in f32 from the integer position as HF does; cos/sin stay within ~1e-7 of the f64
 * values of that angle for angles up to ~4e5 (positions up to 400k at any theta).
 */
export function rope(x: Tensor, positions: Tensor, options: RopeOptions): Tensor {
  check(x, positions, options);
  const invFreq = invFreqTensor(x.shape[3], options);
  const out = rotate(x, positions, invFreq, 1);
  const owned = options.invFreq !== undefined; // a per-call upload, not the cached table
  const result = record("rope", [x, positions], out, (g) => {
    const gx = rotate(g, positions, invFreq, -1);
    if (owned) invFreq.dispose();
    return [gx, null];
  });
  if (owned && !result.node) invFreq.dispose();
  return result;
}
