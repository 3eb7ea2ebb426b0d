/**
 * The engine's prefills: token ids run into the blocks of a paged sequence, several at once,
 * each after the `cached` positions its blocks already hold (the prefix cache's: full blocks,
 * so `cached` is a multiple of blockSize). Those without cached positions: one plain prefill
 * left-padded to the longest. Those with some run together against a contiguous cache
 * [n, Cm + T] (Cm the most cached positions, T the most new ones) into which each row's cached
 * keys and values are copied, right-aligned to Cm, and its new tokens go right-aligned to Cm + T;
 * the gaps are masked keys, the positions (RoPE) each token's true index, and the causal
 * attention over the cache sees, for each new token, its row's cached prefix and the new tokens
 * up to it (a cache of halves is unpacked to f32 per layer for it). Each row's new keys and
 * values are then copied into its blocks after the cached ones.
 */
import type { CausalLM, KvCache, KvDtype, PagedKvCache, PagedSequence } from "../nn/mod.ts";
import { attention, Tensor, unpackHalves } from "../tensor/mod.ts";

/** Token ids to prefill into the blocks of `cache`, of which the first `cached` hold theirs. */
export interface PrefillTarget {
  ids: Int32Array;
  cache: PagedSequence;
  cached: number;
}

export interface PrefillInput {
  model: CausalLM;
  cache: PagedKvCache;
  kvDtype: KvDtype;
}

/** Where a target's last-position logits are: row `row` of `logits` [n, V]. */
export interface PrefillRow {
  logits: Tensor;
  row: number;
}

/**
 * Prefills `targets` (blocks reserved): those with cached positions together (`extend`), the
 * others in one plain prefill (not padded to the cached ones' length); where each one's
 * last-position logits are, in order (the caller copies each row once, to where it goes).
 */
export function prefill(input: PrefillInput, targets: PrefillTarget[]): PrefillRow[] {
  const cached = targets.filter((t) => t.cached > 0);
  const fresh = targets.filter((t) => t.cached === 0);
  const parts = [
    cached.length > 0 ? extend(input, cached) : null,
    fresh.length > 0 ? plain(input, fresh) : null,
  ];
  const next = [0, 0];
  return targets.map((t) => {
    const k = t.cached > 0 ? 0 : 1;
    return { logits: parts[k]!, row: next[k]++ };
  });
}

/** One left-padded prefill of targets without cached positions. */
function plain(input: PrefillInput, targets: PrefillTarget[]): Tensor {
  const contexts = targets.map((t) => t.ids);
  const n = targets.length, C = Math.max(...contexts.map((c) => c.length));
  const ids = new Int32Array(n * C), mask = new Int32Array(n * C), pos = new Int32Array(n * C);
  contexts.forEach((c, b) => {
    const pad = C - c.length;
    ids.set(c, b * C + pad);
    mask.fill(1, b * C + pad, (b + 1) * C);
    for (let i = 0; i < c.length; i++) pos[b * C + pad + i] = i;
  });
  const kv = input.model.createCache(n, C, mask, { dtype: input.kvDtype });
  try {
    const logits = input.model.prefill(kv, Tensor.from(ids, [n, C], "i32"), {
      positionIds: Tensor.from(pos, [n, C], "i32"),
      attentionMask: Tensor.from(mask, [n, C], "i32"),
    });
    contexts.forEach((c, b) => {
      input.cache.writePrefill(targets[b].cache, kv, c.length, { row: b, from: C - c.length });
    });
    return logits;
  } finally {
    kv.dispose();
  }
}

/** The prefill of a batch in which some rows start after cached positions (module doc). */
function extend(input: PrefillInput, targets: PrefillTarget[]): Tensor {
  const n = targets.length;
  const Cm = Math.max(...targets.map((t) => t.cached));
  const T = Math.max(...targets.map((t) => t.ids.length - t.cached)), S = Cm + T;
  const ids = new Int32Array(n * T), pos = new Int32Array(n * T), mask = new Int32Array(n * S);
  targets.forEach(({ ids: all, cached: c }, b) => {
    const t = all.length - c;
    ids.set(all.subarray(c), b * T + T - t);
    for (let i = 0; i < t; i++) pos[b * T + T - t + i] = c + i;
    mask.fill(1, b * S + Cm - c, b * S + Cm);
    mask.fill(1, b * S + S - t, (b + 1) * S);
  });
  const kv = input.model.createCache(n, S, mask, { dtype: input.kvDtype });
  try {
    targets.forEach((t, b) => {
      if (t.cached > 0) {
        input.cache.readPrefix(t.cache, kv, t.cached, { row: b, from: Cm - t.cached });
      }
    });
    kv.advance(Cm);
    const logits = input.model.decodeWith(
      Tensor.from(ids, [n, T], "i32"),
      Tensor.from(pos, [n, T], "i32"),
      (l) => ({
        rotate: (qkv, rope) => kv.ropeAppend(l, qkv, rope),
        attend: (q) => cachedAttention(kv, l, q, S),
      }),
      Math.max(...targets.map((t) => t.ids.length)),
    );
    kv.advance(T);
    targets.forEach((t, b) => {
      const len = t.ids.length - t.cached;
      input.cache.writePrefill(t.cache, kv, len, { row: b, from: S - len, at: t.cached });
    });
    return logits;
  } finally {
    kv.dispose();
  }
}

/**
 * q [n, T, Hq, D] against the first S positions of layer `l` of `kv` (causal, masked); a cache
 * of halves is read as f32 (the prefill kernels take f32 keys and values).
 */
function cachedAttention(kv: KvCache, l: number, q: Tensor, S: number): Tensor {
  const half = kv.keys[l].dtype === "f16";
  const k = half ? unpackHalves(kv.keys[l]) : kv.keys[l];
  const v = half ? unpackHalves(kv.values[l]) : kv.values[l];
  return attention(q, k, v, { keyMask: kv.keyMask, kvLength: S, causal: true });
}
