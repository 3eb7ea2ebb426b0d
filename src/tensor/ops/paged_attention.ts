/**
 * Decode attention over a paged KV cache: one query position per row against that row's own keys,
 * read through a block table (attention_decode.wgsl with PAGED, its key range split over
 * workgroups and merged by attention_combine). Rows are ragged: each has its own length, no
 * padding. Inference only.
 */
import { fmtShape, Tensor } from "../tensor.ts";
import type { Geometry } from "./attention_common.ts";
import { dispatchDecode, shapeFor } from "./attention_decode.ts";

export interface PagedAttentionOptions {
  /**
   * i32 [B, 1 + W]: per row its key length, then the ids of its blocks in order (W at least
   * ceil(length / blockSize); unused entries must still be valid block ids, e.g. 0).
   */
  table: Tensor;
  /** The longest row's length (at most W * blockSize): the key range the kernel splits. */
  maxLength: number;
  /** Logit scale (default 1 / sqrt(D)). */
  scale?: number;
}

/**
 * q [B, 1, Hq, D] against key and value pools [numBlocks, blockSize, Hkv, D] (f32, or f16 halves)
 * through `table`; returns [B, 1, Hq, D]. Query head h reads kv head floor(h / (Hq / Hkv)).
 */
export function pagedAttention(
  q: Tensor,
  keys: Tensor,
  values: Tensor,
  options: PagedAttentionOptions,
): Tensor {
  const { table, maxLength } = options;
  const [B, T, Hq, D] = q.shape;
  const [, S, Hkv, Dk] = keys.shape;
  const packed = keys.dtype === "f16";
  const W = table.shape[1] - 1;
  const ok = q.rank === 4 && T === 1 && q.dtype === "f32" && keys.rank === 4 && Dk === D &&
    (keys.dtype === "f32" || (packed && D % 4 === 0)) && values.dtype === keys.dtype &&
    keys.shape.every((d, i) => d === values.shape[i]) && Hkv > 0 && Hq % Hkv === 0 &&
    table.dtype === "i32" && table.rank === 2 && table.shape[0] === B && W >= 1 &&
    Number.isInteger(maxLength) && maxLength >= 1 && maxLength <= W * S;
  if (!ok) {
    throw new Error(
      `pagedAttention: expected q f32 [B, 1, Hq, D], pools [blocks, blockSize, Hkv, D] both f32 ` +
        `or both f16 (D % 4 == 0), table i32 [B, 1 + W] and 1 <= maxLength <= W * blockSize; got ` +
        `q ${fmtShape(q.shape)} ${q.dtype}, keys ${fmtShape(keys.shape)} ${keys.dtype}, values ` +
        `${fmtShape(values.shape)} ${values.dtype}, table ${fmtShape(table.shape)} ` +
        `${table.dtype}, maxLength ${maxLength}`,
    );
  }
  const g: Geometry = {
    B,
    T: 1,
    S,
    L: maxLength,
    Hq,
    Hkv,
    D,
    G: Hq / Hkv,
    off: 0,
    scale: options.scale ?? 1 / Math.sqrt(D),
    causal: false,
    mask: table,
    packed,
    half: false,
  };
  if (shapeFor(g) === null) {
    throw new Error(`pagedAttention: ${Hq / Hkv} query heads of size ${D} per kv head do not fit`);
  }
  const out = Tensor.empty(q.shape, "f32", "paged_attention");
  const lse = Tensor.empty([B, Hq, 1], "f32", "paged_attention.lse");
  dispatchDecode(g, q, keys, values, { out, lse }, true);
  lse.dispose();
  return out;
}
