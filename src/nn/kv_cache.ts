/**
 * Per-layer key/value caches for decoding [B, Smax, Hkv, D] plus the key mask [B, Smax] that the
 * attention kernel reads (prompt padding 0, everything generated 1). The caches hold f32 values,
 * or IEEE halves (dtype "f16": half the memory and the bytes each decode step reads, on any
 * adapter; the attention decode kernel reads them). New keys and values are
 * written by the dispatch that rotates q and k (ropeAppend); attention reads a `kvLength` view.
 */
import { gpu, packParams } from "../gpu/mod.ts";
import { grid1d, type QkvSplits, type RopeOptions, ropeQKIntoCache } from "../tensor/mod.ts";
import { fmtShape, Tensor } from "../tensor/mod.ts";

const WG = 256;

/** Element type of a KV cache. */
export type KvDtype = "f32" | "f16";

export class KvCache {
  /** Positions filled so far (the prompt, then one per decode step). */
  length = 0;

  private constructor(
    readonly batch: number,
    readonly maxLength: number,
    readonly keys: Tensor[],
    readonly values: Tensor[],
    readonly keyMask: Tensor,
  ) {}

  /**
   * Caches for `layers` layers; `promptMask` [B, P] (1 = token, 0 = left padding) starts the key
   * mask, whose remaining columns are 1.
   */
  static create(
    options: {
      layers: number;
      batch: number;
      maxLength: number;
      kvHeads: number;
      headDim: number;
      promptMask: Int32Array;
      /** Element type of the caches (default f32); f16 needs headDim % 4 == 0. */
      dtype?: KvDtype;
    },
  ): KvCache {
    const { layers, batch: B, maxLength: S, kvHeads, headDim } = options;
    const dtype = options.dtype ?? "f32";
    if ((dtype !== "f32" && dtype !== "f16") || (dtype === "f16" && headDim % 4 !== 0)) {
      throw new Error(
        `KvCache: dtype ${dtype} with head size ${headDim}: use f32, or f16 with a head size ` +
          `that is a multiple of 4`,
      );
    }
    const P = options.promptMask.length / B;
    if (!Number.isInteger(P) || P > S) {
      throw new Error(
        `KvCache: prompt mask of ${options.promptMask.length} values does not fit [${B}, <= ${S}]`,
      );
    }
    const mask = new Int32Array(B * S).fill(1);
    for (let b = 0; b < B; b++) {
      mask.set(options.promptMask.subarray(b * P, (b + 1) * P), b * S);
    }
    const shape = [B, S, kvHeads, headDim];
    const keys = [], values = [];
    for (let l = 0; l < layers; l++) {
      keys.push(Tensor.empty(shape, dtype, `kv_cache.k${l}`).keep());
      values.push(Tensor.empty(shape, dtype, `kv_cache.v${l}`).keep());
    }
    const keyMask = Tensor.from(mask, [B, S], "i32", "kv_cache.mask").keep();
    return new KvCache(B, S, keys, values, keyMask);
  }

  /**
   * Rotates q [B / r, T, Hq, D] and k [B / r, T, Hkv, D] at `positions` in place (ropeQK's
   * values) and writes the rotated k and v of `layer` at the current length (call `advance` after
   * all layers), in one dispatch; cache row b takes row floor(b / r), so a prompt's prefill is
   * shared by the r samples drawn from it. Returns the rotated q and k. Inference only.
   */
  ropeAppend(
    layer: number,
    qkv: { q: Tensor; k: Tensor; v: Tensor; positions: Tensor; splits?: QkvSplits },
    rope: RopeOptions,
  ): [Tensor, Tensor] {
    const cache = { keys: this.keys[layer], values: this.values[layer], start: this.length };
    return ropeQKIntoCache(qkv.q, qkv.k, qkv.v, qkv.positions, {
      ...rope,
      cache,
      splits: qkv.splits,
    });
  }

  advance(steps: number): void {
    this.length += steps;
  }

  dispose(): void {
    for (const t of [...this.keys, ...this.values, this.keyMask]) t.dispose();
  }
}

/** x [B, T, C] -> x[:, T - 1, :] as [B, C] (no gradient: inference only). */
export function lastStep(x: Tensor): Tensor {
  if (x.rank !== 3 || x.dtype !== "f32") {
    throw new Error(`lastStep: expected f32 [B, T, C], got ${x.dtype} ${fmtShape(x.shape)}`);
  }
  const [B, T, C] = x.shape;
  const out = Tensor.empty([B, C], "f32", "last_step");
  gpu().dispatch({ shader: "kv_cache_last" }, {
    params: packParams([B * C, T, C]),
    buffers: [x.buffer, out.buffer],
    workgroups: grid1d(B * C, WG),
  });
  return out;
}
