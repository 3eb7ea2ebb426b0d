/**
 * The cached decoding path's rotation: {@link ropeQK} of q and k in place, and the KV-cache write
 * of the rotated k and of v, in one dispatch (shaders/rope_qk_cache.wgsl). Inference only.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { registerOp } from "../autograd.ts";
import { isGradEnabled } from "../grad_mode.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";
import { check, invFreqTensor, type RopeOptions } from "./rope.ts";

const WG = 256;

registerOp(
  "rope_qk_cache",
  "q [B/r, T, Hq, D], k and v [B/r, T, Hkv, D], positions i32 [B/r, T], caches [B, Smax, Hkv, D] " +
    "-> q and k rotated in place (ropeQK's values), rotated k and v written to cache rows " +
    "s*r .. s*r+r-1 at time start + t; no gradient",
);

/** Storage buffers the rotation from split partials with biases binds (rope_cache_write.wgsl). */
const SPLIT_BINDINGS = 12;

/**
 * A split-K qkv_linear's partials (part [splits, rows, Nq + Nk + Nv], qkv_linear's `sum` hook)
 * and its three biases (or none): the rotation then makes q, k and v itself, summing each
 * element's splits as the split sum would, and writes all three out.
 */
export interface QkvSplits {
  part: Tensor;
  splits: number;
  biases: readonly [Tensor, Tensor, Tensor] | null;
}

/** Whether this device binds what a rotation from split partials needs. */
export function ropeFromSplitsFits(): boolean {
  return gpu().limits.maxStorageBuffersPerShaderStage >= SPLIT_BINDINGS;
}

/**
 * Where the rotated keys and the values go: f32 caches, or f16 ones (IEEE halves, each value
 * rounded to nearest; D a multiple of 4), both [B, Smax, Hkv, D].
 */
export interface CacheWrite {
  keys: Tensor; // [B, Smax, Hkv, D] f32 or f16
  values: Tensor; // [B, Smax, Hkv, D], the dtype of keys
  /** Time offset of the first of the T new positions. */
  start: number;
}

/**
 * {@link ropeQK} of q [B / r, T, Hq, D] and k [B / r, T, Hkv, D] at positions [B / r, T], done
 * in place (the same tensors come back, rotated, with ropeQK's values bit for bit), and in the
 * same dispatch the rotated k and v [B / r, T, Hkv, D] written into the caches
 * [B, Smax, Hkv, D] at times start .. start + T - 1: cache row b takes row floor(b / r), so a
 * prompt's prefill serves its r samples. No gradient: it throws while gradients are recorded.
 */
export function ropeQKIntoCache(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  positions: Tensor,
  options: RopeOptions & { cache: CacheWrite; splits?: QkvSplits | null },
): [Tensor, Tensor] {
  check(q, positions, options);
  check(k, positions, options);
  const { keys, values, start } = options.cache;
  const [B, S, H, D] = keys.shape;
  const [Bs, T] = q.shape;
  const repeat = B / Bs;
  const desc = () =>
    `q ${fmtShape(q.shape)}, k ${fmtShape(k.shape)} ${k.dtype}, v ${fmtShape(v.shape)} ` +
    `${v.dtype}, caches ${fmtShape(keys.shape)} ${keys.dtype} ${fmtShape(values.shape)} ` +
    `${values.dtype} at ${start}`;
  const packed = keys.dtype === "f16";
  const ok = keys.rank === 4 && (keys.dtype === "f32" || (packed && D % 4 === 0)) &&
    values.dtype === keys.dtype &&
    keys.shape.every((d, i) => d === values.shape[i]) && Number.isInteger(repeat) &&
    q.shape[3] === D && k.shape.every((d, i) => d === v.shape[i]) && v.dtype === "f32" &&
    k.shape[2] === H && k.shape[3] === D;
  if (!ok) {
    throw new Error(
      `ropeQKIntoCache: expected q [B/r, T, Hq, D], k and v [B/r, T, Hkv, D] f32 and caches ` +
        `[B, Smax, Hkv, D] both f32 or both f16 (then D % 4 == 0) for a whole r; got ${desc()}`,
    );
  }
  if (!Number.isInteger(start) || start < 0 || start + T > S) {
    throw new Error(`ropeQKIntoCache: ${T} positions from ${start} exceed the cache's ${S}`);
  }
  if (isGradEnabled() && (q.requiresGrad || k.requiresGrad || v.requiresGrad)) {
    throw new Error("ropeQKIntoCache: inference only (rotates in place); use ropeQK to train");
  }
  dispatchRopeIntoCache({ shader: "rope_qk_cache" }, { q, k, v, positions, keys, values }, {
    rows: Bs * T,
    tail: [T, S, start, repeat],
    rope: options,
    splits: options.splits,
  });
  return [q, k];
}

/**
 * The dispatch shared by rope_qk_cache and paged_rope_qk_cache (shaders/include/
 * rope_cache_write.wgsl): `rows` token rows of q [rows, Hq, D] and k, v [rows, Hkv, D]; `tail`
 * the kernel's own parameters after the common ones; `table` the paged kernel's block table;
 * `splits`: q, k and v made from a split qkv_linear's partials (then written too).
 */
export function dispatchRopeIntoCache(
  kernel: { shader: "rope_qk_cache" | "paged_rope_qk_cache" },
  t: Record<"q" | "k" | "v" | "positions" | "keys" | "values", Tensor> & { table?: Tensor },
  o: { rows: number; tail: number[]; rope: RopeOptions; splits?: QkvSplits | null },
): void {
  const Hq = t.q.shape[2], H = t.k.shape[2], D = t.q.shape[3];
  const packed = t.keys.dtype === "f16";
  const split = o.splits ?? null, biases = split?.biases ?? null;
  if (split) checkSplits(split, o.rows, Hq * D, H * D);
  const invFreq = invFreqTensor(D, o.rope);
  // Invocations: one per pair of columns (d, d + D/2), or per two neighbouring pairs when packed.
  const n = o.rows * (Hq + H) * D / (packed ? 4 : 2);
  if (n > 0) {
    const inputs = [t.q, t.k, t.v, t.positions, invFreq, t.keys, t.values].map((x) => x.buffer);
    const extra = split ? [split.part, ...biases ?? []].map((x) => x.buffer) : [];
    const defines = {
      WG,
      PACKED: packed,
      FROM_SPLITS: split !== null,
      HAS_BIAS: biases !== null,
      BIAS_T: biases?.[0].dtype ?? "f32",
    };
    gpu().dispatch({ ...kernel, defines, f16: biases?.[0].dtype === "f16" }, {
      params: packParams([
        n,
        Hq,
        H,
        D / 2,
        { f32: o.rope.scale ?? 1 },
        ...o.tail,
        split?.splits ?? 0,
      ]),
      buffers: [...inputs, t.table?.buffer ?? null, ...extra],
      workgroups: grid1d(n, WG),
    });
    for (const x of [t.q, t.k, t.keys, t.values, ...split ? [t.v] : []]) x.markWritten();
  }
  // A per-call upload, not the cached table or the caller's tensor.
  if (o.rope.invFreq !== undefined && !(o.rope.invFreq instanceof Tensor)) invFreq.dispose();
}

function checkSplits(s: QkvSplits, rows: number, nq: number, nk: number): void {
  const b = s.biases, width = nq + 2 * nk;
  const ok = s.part.rank === 3 && s.part.shape[0] === s.splits && s.part.shape[1] === rows &&
    s.part.shape[2] === width && s.part.dtype === "f32" && ropeFromSplitsFits() &&
    (!b || b.every((t, i) => t.rank === 1 && t.dtype === b[0].dtype && t.size === [nq, nk, nk][i]));
  if (!ok) {
    throw new Error(
      `rope into cache from splits: expected part f32 [${s.splits}, ${rows}, ${width}] and ` +
        `biases [${nq}], [${nk}], [${nk}] of one dtype on a device binding ${SPLIT_BINDINGS} ` +
        `storage buffers; got part ${fmtShape(s.part.shape)} ${s.part.dtype}, biases ` +
        (b ? b.map((t) => `${fmtShape(t.shape)} ${t.dtype}`).join(", ") : "none"),
    );
  }
}
