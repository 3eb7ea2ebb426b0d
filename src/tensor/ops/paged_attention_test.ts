import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import { noGrad } from "../grad_mode.ts";
import { roundToF16 } from "../half.ts";
import { Tensor } from "../tensor.ts";
import { pagedAttentionRef, type PagedLayout, pagedRopeCacheRef } from "../ref/paged.ts";
import { pagedAttention } from "./paged_attention.ts";
import { pagedRopeQKIntoCache } from "./paged_rope_cache.ts";

const round = (a: Float32Array) => a.map(roundToF16);

/** [B, 1 + W] of lengths and block ids, unused entries 0. */
function tableOf(layout: PagedLayout): { table: Tensor; maxLength: number } {
  const W = Math.max(...layout.rows.map((r) => r.blocks.length));
  const t = new Int32Array(layout.rows.length * (1 + W));
  layout.rows.forEach((r, b) => {
    t[b * (1 + W)] = r.length;
    t.set(r.blocks, b * (1 + W) + 1);
  });
  const maxLength = Math.max(...layout.rows.map((r) => r.length));
  return { table: Tensor.from(t, [layout.rows.length, 1 + W], "i32"), maxLength };
}

/** Ragged rows over non-contiguous, shuffled block ids (row 1: 70 keys over several blocks). */
function layoutOf(H: number, D: number, bs: number): PagedLayout {
  const long = [9, 2, 0, 11, 4, 7, 8, 12, 13].slice(0, Math.ceil(70 / bs));
  return {
    blockSize: bs,
    kvHeads: H,
    headDim: D,
    rows: [
      { length: 3, blocks: [6] },
      { length: 70, blocks: long },
      { length: 17, blocks: [5, 1, 10] },
      { length: 1, blocks: [3] },
    ],
  };
}

gpuTest(
  "pagedAttention: ragged rows through non-contiguous block tables vs the reference",
  async () => {
    // [Hq, Hkv, D, blockSize, half]
    const cases = [[4, 2, 8, 16, false], [3, 1, 16, 16, false], [4, 2, 8, 16, true]];
    cases.push([2, 2, 4, 8, true]);
    for (const [Hq, H, D, bs, half] of cases as [number, number, number, number, boolean][]) {
      const layout = layoutOf(H, D, bs);
      const B = layout.rows.length, blocks = 14;
      const q = randomArray(B * Hq * D, 1, -2, 2);
      const pool = (seed: number) => {
        const a = randomArray(blocks * bs * H * D, seed, -2, 2);
        return half ? round(a) : a;
      };
      const keys = pool(2), values = pool(3);
      const dtype = half ? "f16" : "f32";
      const { table, maxLength } = tableOf(layout);
      const got = noGrad(() =>
        pagedAttention(
          Tensor.from(q, [B, 1, Hq, D]),
          Tensor.from(keys, [blocks, bs, H, D], dtype),
          Tensor.from(values, [blocks, bs, H, D], dtype),
          { table, maxLength },
        )
      );
      const want = pagedAttentionRef(q, keys, values, layout, { queryHeads: Hq });
      const label = `Hq${Hq} Hkv${H} D${D} bs${bs} ${dtype}`;
      assertClose(await got.toArray(), want, { atol: 2e-5, rtol: 1e-4, label });
    }
  },
);

gpuTest(
  "pagedRopeQKIntoCache: ropeQK values, k and v written through the block table",
  async () => {
    for (const half of [false, true]) {
      const Hq = 4, H = 2, D = 8, bs = 4, blocks = 9;
      const layout: PagedLayout = {
        blockSize: bs,
        kvHeads: H,
        headDim: D,
        rows: [
          { length: 1, blocks: [7] },
          { length: 10, blocks: [2, 8, 0] },
          { length: 8, blocks: [5, 1] },
        ],
      };
      const B = layout.rows.length;
      const qa = randomArray(B * Hq * D, 4), ka = randomArray(B * H * D, 5);
      const va = randomArray(B * H * D, 6);
      const positions = Int32Array.from([0, 9, 7]);
      const before = randomArray(blocks * bs * H * D, 7);
      const pools = { keys: half ? round(before) : before, values: half ? round(before) : before };
      const dtype = half ? "f16" : "f32";
      const keys = Tensor.from(pools.keys, [blocks, bs, H, D], dtype);
      const values = Tensor.from(pools.values, [blocks, bs, H, D], dtype);
      const { table } = tableOf(layout);
      const q = Tensor.from(qa, [B, 1, Hq, D]), k = Tensor.from(ka, [B, 1, H, D]);
      const [qr, kr] = noGrad(() =>
        pagedRopeQKIntoCache(
          q,
          k,
          Tensor.from(va, [B, 1, H, D]),
          Tensor.from(positions, [B, 1], "i32"),
          {
            theta: 1e4,
            cache: { keys, values, table },
          },
        )
      );
      assert.equal(qr, q, "q is rotated in place");
      const want = pagedRopeCacheRef({ q: qa, k: ka, v: va, positions }, pools, layout, {
        queryHeads: Hq,
        theta: 1e4,
      });
      const tol = { atol: half ? 2e-3 : 5e-7, rtol: half ? 1e-3 : 0 };
      assertClose(await qr.toArray(), want.q, { atol: 5e-7, rtol: 0, label: `q ${dtype}` });
      assertClose(await kr.toArray(), want.k, { atol: 5e-7, rtol: 0, label: `k ${dtype}` });
      assertClose(await keys.toArray(), want.keys, { ...tol, label: `keys ${dtype}` });
      assertClose(await values.toArray(), want.values, { ...tol, label: `values ${dtype}` });
    }
  },
);

gpuTest("paged kernels refuse bad shapes", () => {
  const q = Tensor.from(new Float32Array(2 * 4 * 8), [2, 1, 4, 8]);
  const pool = Tensor.empty([3, 4, 2, 8], "f32");
  const table = Tensor.from(new Int32Array([1, 0, 1, 0]), [2, 2], "i32");
  assert.throws(
    () => noGrad(() => pagedAttention(q, pool, pool, { table, maxLength: 5 })),
    /maxLength 5/,
  );
  const q2 = Tensor.from(new Float32Array(2 * 2 * 4 * 8), [2, 2, 4, 8]);
  assert.throws(
    () => noGrad(() => pagedAttention(q2, pool, pool, { table, maxLength: 1 })),
    /q \[2, 2, 4, 8\]/,
  );
});
