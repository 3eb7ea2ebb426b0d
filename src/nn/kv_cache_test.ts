import assert from "node:assert/strict";
import { gpuTest, randomArray } from "../testing/mod.ts";
import { gpu } from "../gpu/mod.ts";
import { noGrad, ropeQK, Tensor } from "../tensor/mod.ts";
import { KvCache } from "./kv_cache.ts";

gpuTest(
  "KvCache.ropeAppend: ropeQK's q, and its k and v written at the cache length (repeat)",
  async () => {
    const [Bs, r, T, Hq, H, D, S, P] = [2, 2, 2, 3, 1, 8, 8, 3];
    const mask = new Int32Array(Bs * r * P).fill(1);
    const opts = {
      layers: 2,
      batch: Bs * r,
      maxLength: S,
      kvHeads: H,
      headDim: D,
      promptMask: mask,
    };
    const fused = KvCache.create(opts);
    // what the cache must hold: ropeQK's k and the given v at [b, length + t] from row b / r
    const want = [0, 1].map(() => ({
      k: new Float32Array(Bs * r * S * H * D),
      v: new Float32Array(Bs * r * S * H * D),
    }));
    const writes: Promise<void>[] = [];
    const rope = { theta: 1e6, scale: 1.25 };
    const checks: Promise<ArrayLike<number>[]>[] = [];
    for (const [step, rows, len] of [[0, Bs, P], [1, Bs * r, 1], [2, Bs * r, T]]) {
      const qs = randomArray(rows * len * Hq * D, 10 + step);
      const ks = randomArray(rows * len * H * D, 20 + step), vs = randomArray(ks.length, 30 + step);
      const pos = Tensor.from(
        Int32Array.from({ length: rows * len }, (_, i) => 3 * i),
        [rows, len],
        "i32",
      );
      const t = (a: Float32Array, h: number) => Tensor.from(a, [rows, len, h, D]);
      const v = t(vs, H);
      noGrad(() => {
        for (let l = 0; l < 2; l++) {
          const [qe, ke] = ropeQK(t(qs, Hq), t(ks, H), pos, rope);
          const at = fused.length, rep = Bs * r / rows;
          writes.push(
            Promise.all([ke.toArray(), v.toArray()]).then(([kn, vn]) => {
              for (let b = 0; b < Bs * r; b++) {
                for (let t = 0; t < len; t++) {
                  const src = (Math.floor(b / rep) * len + t) * H * D,
                    dst = (b * S + at + t) * H * D;
                  want[l].k.set(kn.slice(src, src + H * D), dst);
                  want[l].v.set(vn.slice(src, src + H * D), dst);
                }
              }
            }),
          );
          const d0 = gpu().recorder.dispatches;
          const [qr] = fused.ropeAppend(l, { q: t(qs, Hq), k: t(ks, H), v, positions: pos }, rope);
          assert.equal(gpu().recorder.dispatches - d0, 1, "one dispatch");
          checks.push(Promise.all([qr.toArray(), qe.toArray()]));
        }
      });
      fused.advance(len);
    }
    for (const pair of await Promise.all(checks)) assert.deepEqual(pair[0], pair[1], "q");
    await Promise.all(writes);
    for (let l = 0; l < 2; l++) {
      assert.deepEqual([...await fused.keys[l].toArray()], [...want[l].k], `keys ${l}`);
      assert.deepEqual([...await fused.values[l].toArray()], [...want[l].v], `values ${l}`);
    }
    fused.dispose();
  },
);

gpuTest("KvCache.create: f16 caches are halves, other dtypes and head sizes are refused", () => {
  const opts = { layers: 1, batch: 1, maxLength: 4, kvHeads: 1, headDim: 8 };
  const promptMask = new Int32Array([1, 1]);
  const half = KvCache.create({ ...opts, promptMask, dtype: "f16" });
  assert.equal(half.keys[0].dtype, "f16");
  assert.equal(half.values[0].byteSize, 4 * 8 * 2);
  half.dispose();
  const full = KvCache.create({ ...opts, promptMask });
  assert.equal(full.keys[0].dtype, "f32");
  full.dispose();
  assert.throws(
    () => KvCache.create({ ...opts, headDim: 6, promptMask, dtype: "f16" }),
    /dtype f16 with head size 6: use f32, or f16 with a head size that is a multiple of 4/,
  );
});
