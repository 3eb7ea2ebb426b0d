import assert from "node:assert/strict";
import { gpu } from "../gpu/mod.ts";
import { gpuTest } from "../testing/mod.ts";
import { KvCache } from "./kv_cache.ts";
import { PagedKvCache, type PagedSequence } from "./paged_kv_cache.ts";

const pool = (numBlocks: number) =>
  PagedKvCache.create({ layers: 2, numBlocks, blockSize: 4, kvHeads: 1, headDim: 2 });
const seq = (): PagedSequence => ({ length: 0, blocks: [] });
const ids = (...xs: number[]) => Int32Array.from(xs);

gpuTest(
  "paged cache: published blocks are found by their whole prefix, never a held one evicted",
  () => {
    const c = pool(6);
    const ctx = ids(1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
    const a = seq();
    assert.ok(c.reserve(a, 10));
    a.length = 10;
    c.publish(a, ctx, 10); // two full blocks
    assert.equal(c.cachedBlocks, 2);
    const [b0, b1] = a.blocks;
    c.release(a);
    assert.equal(c.freeBlocks, 6, "cached blocks nobody holds count as free");
    // The same first block after other tokens is not the same prefix.
    const other = seq();
    assert.equal(c.matchPrefix(other, ids(9, 9, 9, 9, 5, 6, 7, 8, 0), 8), 0);
    assert.equal(c.matchPrefix(other, ids(1, 2, 3, 4, 5, 6, 7, 0, 0), 8), 4);
    assert.deepEqual(other.blocks, [b0]);
    c.release(other);
    // `limit` caps the match; a match holds the blocks (out of the free count).
    const b = seq(), b2 = seq();
    assert.equal(c.matchPrefix(b, ctx, 7), 4);
    assert.equal(c.matchPrefix(b2, ctx, 9), 8);
    c.release(b);
    c.release(b2);
    const held = seq();
    assert.equal(c.matchPrefix(held, ctx, 9), 8);
    assert.equal(c.freeBlocks, 4);
    // Taking every free block evicts nothing held: the pool is short instead.
    const big = seq();
    assert.ok(!c.reserve(big, 20));
    assert.ok(c.reserve(big, 16));
    assert.deepEqual(held.blocks, [b0, b1]);
    assert.ok(!big.blocks.includes(b0) && !big.blocks.includes(b1));
    c.release(big);
    c.release(held);
    // Least recently released first: b1 (a sequence releases its last block first), then b0.
    const next = seq();
    assert.ok(c.reserve(next, 24));
    assert.equal(next.blocks.at(-1), b0);
    assert.equal(next.blocks.at(-2), b1);
    assert.equal(c.cachedBlocks, 0);
    assert.equal(c.matchPrefix(seq(), ctx, 9), 0);
    c.release(next);
    c.dispose();
  },
);

gpuTest("paged cache: clearPrefixCache frees what nobody holds and forgets every key", () => {
  const c = pool(4);
  const a = seq(), ctx = ids(1, 2, 3, 4, 5, 6, 7, 8);
  c.reserve(a, 8);
  c.publish(a, ctx, 8);
  const b = seq();
  assert.equal(c.matchPrefix(b, ctx, 8), 8);
  c.release(a);
  c.clearPrefixCache();
  assert.equal(c.cachedBlocks, 0);
  assert.equal(c.matchPrefix(seq(), ctx, 8), 0);
  c.release(b);
  assert.equal(c.freeBlocks, 4);
  c.dispose();
});

gpuTest(
  "paged cache: writePrefill after cached blocks and readPrefix move the same bytes",
  async () => {
    const c = pool(8);
    const mask = new Int32Array(2 * 12).fill(1);
    const make = () =>
      KvCache.create({
        layers: 2,
        batch: 2,
        maxLength: 12,
        kvHeads: 1,
        headDim: 2,
        promptMask: mask,
      });
    const src = make(), dst = make();
    const data = (l: number, v: number) =>
      Float32Array.from({ length: 48 }, (_, i) => 1000 * v + 100 * l + i);
    src.keys.forEach((t, l) => gpu().upload(t.buffer, data(l, 0)));
    src.values.forEach((t, l) => gpu().upload(t.buffer, data(l, 1)));
    src.advance(12);
    const s = seq();
    c.reserve(s, 12);
    // Row 1's positions 2..9 fill positions 4..11 of the sequence (its first block is cached).
    c.writePrefill(s, src, 8, { row: 1, from: 2, at: 4 });
    assert.equal(s.length, 12);
    assert.throws(() => c.writePrefill(s, src, 4, { at: 2 }), /aligned/);
    assert.throws(() => c.readPrefix(s, dst, 6), /whole blocks/);
    c.readPrefix({ length: 0, blocks: s.blocks.slice(1) }, dst, 8, { row: 0, from: 3 });
    for (const [l, v, t] of [[0, 0, dst.keys[0]], [1, 1, dst.values[1]]] as const) {
      const got = await t.toArray(), want = data(l, v);
      // Position p of row 0 holds 2 floats at 2p; row 1 starts at float 24.
      assert.deepEqual([...got.subarray(6, 22)], [...want.subarray(24 + 4, 24 + 20)]);
    }
    src.dispose();
    dst.dispose();
    c.dispose();
  },
);
