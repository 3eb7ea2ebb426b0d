import { gpu, packParams } from "../../gpu/mod.ts";
import { record, recordMany, registerOp } from "../autograd.ts";
import { noGrad } from "../grad_mode.ts";
import { scope } from "../scope.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { addScalar, cast, exp, log, mul, mulScalar, powScalar, relu } from "./elementwise.ts";
import { grid1d } from "./grid.ts";
import { max } from "./reduce.ts";

const WG = 256;

registerOp(
  "rope",
  "x [B, T, H, D], positions i32 [B, T] -> rotary embedding with HF's rotate_half pairing " +
    "(i, i + D/2), inv_freq = theta^(-2i/D) or a given table, cos/sin times scale; grad for x " +
    "(rotation by the negative angle, same scale)",
);

registerOp(
  "rope_qk",
  "q [B, T, Hq, D], k [B, T, Hkv, D], positions i32 [B, T] -> rope of q and of k in one " +
    "dispatch (equal to rope's bit for bit); grads for q and k in one dispatch",
);

export interface RopeOptions {
  /** Base of the inverse frequencies (HF `rope_theta`, 10000 for Llama 2, 1e6 for Qwen2). */
  theta: number;
  /**
   * Precomputed inverse frequencies [D/2] overriding theta's (HF rope_scaling variants such as
   * llama3 or linear compute their own inv_freq). An array is uploaded for this call; a tensor
   * (e.g. a model's table, or {@link ropeDynamicInvFreq}'s) is used as is and stays the caller's.
   */
  invFreq?: Float32Array | Tensor;
  /** Factor on cos and sin (HF's attention scaling: YaRN's mscale; default 1). */
  scale?: number;
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

export function invFreqTensor(D: number, options: RopeOptions): Tensor {
  const given = options.invFreq;
  if (given) {
    const n = given instanceof Tensor ? given.size : given.length;
    if (n !== D / 2 || (given instanceof Tensor && given.dtype !== "f32")) {
      throw new Error(`rope: invFreq has ${n} values, expected D/2 = ${D / 2} (f32)`);
    }
    return given instanceof Tensor ? given : Tensor.from(given, [D / 2], "f32", "rope.inv_freq");
  }
  const key = `${options.theta}:${D}`;
  let t = invFreqCache.get(key);
  if (!t || t.disposed) {
    t = Tensor.from(ropeInvFreq(options.theta, D), [D / 2], "f32", "rope.inv_freq").keep();
    invFreqCache.set(key, t);
  }
  return t;
}

export function check(x: Tensor, positions: Tensor, options: RopeOptions): void {
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
  const scale = options.scale ?? 1;
  if (!(scale > 0) || !Number.isFinite(scale)) {
    throw new Error(`rope: scale must be a positive number, got ${scale}`);
  }
}

function rotate(
  x: Tensor,
  positions: Tensor,
  invFreq: Tensor,
  rot: { sign: number; scale: number; shape?: readonly number[] },
) {
  const shape = rot.shape ?? x.shape; // [B, T, H, D]
  const [, , H, D] = shape;
  const out = Tensor.empty(shape, "f32", "rope");
  const n = x.size / 2;
  if (n > 0) {
    gpu().dispatch({ shader: "rope", defines: { WG } }, {
      params: packParams([n, H, D / 2, { f32: rot.sign }, { f32: rot.scale }]),
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
  const scale = options.scale ?? 1;
  const out = rotate(x, positions, invFreq, { sign: 1, scale });
  // A per-call upload, not the cached table or the caller's tensor.
  const owned = options.invFreq !== undefined && !(options.invFreq instanceof Tensor);
  const result = record("rope", [x, positions], out, (g) => {
    const gx = rotate(g, positions, invFreq, { sign: -1, scale, shape: x.shape });
    if (owned) invFreq.dispose();
    return [gx, null];
  });
  if (owned && !result.node) invFreq.dispose();
  return result;
}

/** Both rotations in one dispatch: q [B, T, Hq, D] and k [B, T, Hkv, D] (or their grads). */
function rotateQK(
  q: Tensor,
  k: Tensor,
  shapes: { q: readonly number[]; k: readonly number[] },
  rot: { positions: Tensor; invFreq: Tensor; sign: number; scale: number },
): [Tensor, Tensor] {
  const [, , Hq, D] = shapes.q, Hkv = shapes.k[2];
  const qOut = Tensor.empty(shapes.q, "f32", "rope.q");
  const kOut = Tensor.empty(shapes.k, "f32", "rope.k");
  const n = (q.size + k.size) / 2;
  if (n > 0) {
    gpu().dispatch({ shader: "rope_qk", defines: { WG } }, {
      params: packParams([n, Hq, Hkv, D / 2, { f32: rot.sign }, { f32: rot.scale }]),
      buffers: [
        q.buffer,
        k.buffer,
        rot.positions.buffer,
        rot.invFreq.buffer,
        qOut.buffer,
        kOut.buffer,
      ],
      workgroups: grid1d(n, WG),
    });
  }
  return [qOut, kOut];
}

/**
 * {@link rope} of q [B, T, Hq, D] and k [B, T, Hkv, D] at the same positions [B, T], in one
 * dispatch (and one for both gradients): each output equals `rope`'s bit for bit.
 */
export function ropeQK(
  q: Tensor,
  k: Tensor,
  positions: Tensor,
  options: RopeOptions,
): [Tensor, Tensor] {
  check(q, positions, options);
  check(k, positions, options);
  if (k.shape[3] !== q.shape[3]) {
    throw new Error(
      `ropeQK: q ${fmtShape(q.shape)} and k ${fmtShape(k.shape)} must share the head dim D`,
    );
  }
  const invFreq = invFreqTensor(q.shape[3], options);
  const scale = options.scale ?? 1;
  const shapes = { q: q.shape, k: k.shape };
  const [qr, kr] = rotateQK(q, k, shapes, { positions, invFreq, sign: 1, scale });
  // A per-call upload, not the cached table or the caller's tensor.
  const owned = options.invFreq !== undefined && !(options.invFreq instanceof Tensor);
  recordMany("rope_qk", [q, k, positions], [qr, kr], ([gq, gk]) => {
    const back = { positions, invFreq, sign: -1, scale };
    const grads = gq && gk ? rotateQK(gq, gk, shapes, back) : [
      gq && rotate(gq, positions, invFreq, { ...back, shape: q.shape }),
      gk && rotate(gk, positions, invFreq, { ...back, shape: k.shape }),
    ];
    if (owned) invFreq.dispose();
    return [...grads, null];
  });
  if (owned && !qr.node) invFreq.dispose();
  return [qr, kr];
}

/** What dynamic NTK scaling needs besides the positions (HF's `rope_type: dynamic`). */
export interface DynamicRopeOptions {
  theta: number;
  /** Head dim D; the table has D/2 entries. */
  headDim: number;
  factor: number;
  maxPositionEmbeddings: number;
}

/**
 * HF's dynamic NTK inverse frequencies [D/2] for a forward over `positions` [B, T] (i32), on the
 * GPU so that no readback is needed: with L = max(positions) + 1 (at least
 * max_position_embeddings M), base = theta * (factor * L / M - (factor - 1))^(D / (D - 2)) and
 * inv_freq_i = base^(-2i/D). Up to L = M this is theta's own table. The f32 steps follow
 * transformers' order; pow is computed as exp(log), within a few f32 ulps of torch's.
 */
export function ropeDynamicInvFreq(positions: Tensor, o: DynamicRopeOptions): Tensor {
  const D = o.headDim, M = o.maxPositionEmbeddings;
  if (positions.dtype !== "i32" || D % 2 !== 0 || D <= 2 || !(o.factor > 0) || !(M > 0)) {
    throw new Error(
      `ropeDynamicInvFreq: expected i32 positions, even D > 2, positive factor and ` +
        `max_position_embeddings; got positions ${positions.dtype}, D ${D}, factor ${o.factor}, M ${M}`,
    );
  }
  const exponents = Float32Array.from({ length: D / 2 }, (_, i) => -Math.fround((2 * i) / D));
  return noGrad(() =>
    scope(() => {
      const seq = addScalar(max(cast(positions, "f32")), 1); // [] L
      const len = addScalar(relu(addScalar(seq, -M)), M); // max(L, M), exact for integers
      const ratio = addScalar(mulScalar(mulScalar(len, o.factor), 1 / M), -(o.factor - 1));
      const base = mulScalar(powScalar(ratio, D / (D - 2)), o.theta); // []
      const e = Tensor.from(exponents, [D / 2], "f32", "rope.exponents");
      return exp(mul(log(base), e)); // [D/2]
    })
  );
}
