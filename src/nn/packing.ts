/**
 * Packed sequences (verl's use_remove_padding): the real tokens of a padded batch [B, T] laid
 * out as N rows, so that token-wise work (embedding, norms, linear layers, the heads) runs on
 * [N, C] instead of [B, T, C]. Attention still runs padded: q, k and v are unpacked into
 * [B, T, H, D] (zeros at the pads, which the key mask hides) and its output packed again.
 */
import {
  attention,
  type AttentionPrecision,
  fmtShape,
  IGNORE_INDEX,
  selectRows,
  Tensor,
} from "../tensor/mod.ts";
import type { Attend } from "./layers.ts";
import { view } from "./layers.ts";

/** Where the real tokens of a [B, T] batch sit; build it with {@link packingOf}. */
export interface Packing {
  batch: number; // B
  length: number; // T
  tokens: number; // N: real tokens
  /** i32 [N]: b * T + t of each real token, row-major. */
  index: Tensor;
  /** i32 [B * T]: the packed row of each position, -1 at padding. */
  inverse: Tensor;
}

/** The packing of a [B, T] attention mask (1 = token, 0 = padding) held on the CPU. */
export function packingOf(mask: Int32Array, shape: readonly [number, number]): Packing {
  const [B, T] = shape;
  if (mask.length !== B * T) {
    throw new Error(`packingOf: mask of ${mask.length} entries is not [${B}, ${T}]`);
  }
  const inverse = new Int32Array(B * T).fill(-1);
  const index: number[] = [];
  for (let i = 0; i < B * T; i++) {
    if (mask[i] === 0) continue;
    inverse[i] = index.length;
    index.push(i);
  }
  return {
    batch: B,
    length: T,
    tokens: index.length,
    index: Tensor.from(index, [index.length], "i32", "packing.index"),
    inverse: Tensor.from(inverse, [B * T], "i32", "packing.inverse"),
  };
}

/**
 * The positions of a [B, T] batch whose targets are scored (not -100): `rows` picks them out of
 * the trunk's output rows (the B * T positions, or the N real tokens of `packing`), `positions`
 * puts per-position results back at [B, T] with zeros elsewhere. The LM head then runs on these
 * rows only: a prompt's positions (and a response's padding) predict nothing the loss reads.
 */
export interface ScoredRows {
  rows: Packing;
  positions: Packing;
}

/**
 * The scored rows of `targets` [B * T] (held on the CPU); `mask` is the packing's attention mask
 * when the trunk runs packed. Null when no target is scored.
 */
export function scoredRowsOf(
  targets: Int32Array,
  shape: readonly [number, number],
  mask: Int32Array | null = null,
): ScoredRows | null {
  const scored = Int32Array.from(targets, (t) => t === IGNORE_INDEX ? 0 : 1);
  if (!scored.includes(1)) return null;
  const positions = packingOf(scored, shape);
  if (mask === null) return { rows: positions, positions };
  const inner: number[] = [];
  for (let i = 0; i < scored.length; i++) {
    if (mask[i] !== 0) inner.push(scored[i]);
    else if (scored[i] !== 0) {
      throw new Error(`scoredRowsOf: position ${i} has a target but is padding in the mask`);
    }
  }
  return { rows: packingOf(Int32Array.from(inner), [1, inner.length]), positions };
}

/** Checks that a [B, T] tensor matches the packing. */
export function checkPacking(p: Packing, ids: Tensor): void {
  if (ids.rank !== 2 || ids.shape[0] !== p.batch || ids.shape[1] !== p.length) {
    throw new Error(
      `packing of [${p.batch}, ${p.length}] does not fit inputIds ${fmtShape(ids.shape)}`,
    );
  }
}

/** x [B, T, ...R] -> its real tokens [N, ...R], through autograd. */
export function pack(x: Tensor, p: Packing): Tensor {
  const flat = view(x, [p.batch * p.length, ...x.shape.slice(2)]); // [B * T, ...R]
  return selectRows(flat, p.index, { inverse: p.inverse });
}

/** x [N, ...R] -> [B, T, ...R] with zeros at the padding, through autograd. */
export function unpack(x: Tensor, p: Packing): Tensor {
  const out = selectRows(x, p.inverse, { inverse: p.index }); // [B * T, ...R]
  return view(out, [p.batch, p.length, ...x.shape.slice(1)]);
}

/**
 * Attention for a packed trunk: q [1, N, Hq, D], k and v [1, N, Hkv, D] -> [1, N, Hq, D], by
 * causal attention over the padded layout under the batch's key mask, in `options.precision`
 * (default f32).
 */
export function packedAttend(
  p: Packing,
  keyMask: Tensor,
  options: { precision?: AttentionPrecision } = {},
): Attend {
  const precision = options.precision ?? "f32";
  const padded = (x: Tensor) => unpack(view(x, x.shape.slice(1)), p); // [B, T, H, D]
  return (q, k, v) => {
    const out = attention(padded(q), padded(k), padded(v), { keyMask, causal: true, precision });
    const packed = pack(out, p); // [N, Hq, D]
    return view(packed, [1, ...packed.shape]);
  };
}
