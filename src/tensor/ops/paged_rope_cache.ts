/**
 * The paged cache's rotation: {@link ropeQK} of one new position per row in place, and the write
 * of the rotated k and of v into that row's block of the pools, in one dispatch
 * (shaders/paged_rope_qk_cache.wgsl). Inference only.
 */
import { registerOp } from "../autograd.ts";
import { isGradEnabled } from "../grad_mode.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { check, type RopeOptions } from "./rope.ts";
import { dispatchRopeIntoCache, type QkvSplits } from "./rope_cache.ts";

registerOp(
  "paged_rope_qk_cache",
  "q [B, 1, Hq, D], k and v [B, 1, Hkv, D], positions i32 [B, 1], pools [blocks, bs, Hkv, D], " +
    "table i32 [B, 1 + W] -> q and k rotated in place, rotated k and v written at key " +
    "length - 1 of each row through its block ids; no gradient",
);

/** Where the rotated keys and the values go: pools [numBlocks, blockSize, Hkv, D] and the table. */
export interface PagedCacheWrite {
  keys: Tensor; // [numBlocks, blockSize, Hkv, D] f32 or f16
  values: Tensor; // like keys
  /** i32 [B, 1 + W]: per row its length counting the new token, then its block ids. */
  table: Tensor;
}

/**
 * {@link ropeQK} of q [B, 1, Hq, D] and k [B, 1, Hkv, D] at positions [B, 1] in place (ropeQK's
 * values bit for bit; the same tensors come back), and in the same dispatch the rotated k and v
 * written at key index length_b - 1 of row b: row (length_b - 1) % blockSize of block
 * ids_b[(length_b - 1) / blockSize]. No gradient: it throws while gradients are recorded.
 */
export function pagedRopeQKIntoCache(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  positions: Tensor,
  options: RopeOptions & { cache: PagedCacheWrite; splits?: QkvSplits | null },
): [Tensor, Tensor] {
  check(q, positions, options);
  check(k, positions, options);
  const { keys, values, table } = options.cache;
  const [, bs, H, D] = keys.shape;
  const [B, T] = q.shape;
  const packed = keys.dtype === "f16";
  const ok = keys.rank === 4 && (keys.dtype === "f32" || (packed && D % 4 === 0)) &&
    values.dtype === keys.dtype && keys.shape.every((d, i) => d === values.shape[i]) &&
    T === 1 && q.shape[3] === D && k.shape.every((d, i) => d === v.shape[i]) &&
    v.dtype === "f32" && k.shape[2] === H && k.shape[3] === D && table.dtype === "i32" &&
    table.rank === 2 && table.shape[0] === B && table.shape[1] >= 2;
  if (!ok) {
    throw new Error(
      `pagedRopeQKIntoCache: expected q [B, 1, Hq, D], k and v [B, 1, Hkv, D] f32, pools ` +
        `[blocks, blockSize, Hkv, D] both f32 or both f16 (then D % 4 == 0) and table i32 ` +
        `[B, 1 + W]; got q ${fmtShape(q.shape)}, k ${fmtShape(k.shape)}, v ` +
        `${fmtShape(v.shape)} ${v.dtype}, pools ${fmtShape(keys.shape)} ${keys.dtype} ` +
        `${fmtShape(values.shape)} ${values.dtype}, table ${fmtShape(table.shape)} ${table.dtype}`,
    );
  }
  if (isGradEnabled() && (q.requiresGrad || k.requiresGrad || v.requiresGrad)) {
    throw new Error("pagedRopeQKIntoCache: inference only (rotates in place); use ropeQK to train");
  }
  dispatchRopeIntoCache({ shader: "paged_rope_qk_cache" }, {
    q,
    k,
    v,
    positions,
    keys,
    values,
    table,
  }, {
    rows: B,
    tail: [table.shape[1], bs],
    rope: options,
    splits: options.splits,
  });
  return [q, k];
}
