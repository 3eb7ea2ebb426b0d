import assert from "node:assert/strict";
import { gpuTest, randomArray } from "../testing/mod.ts";
import { gpu } from "../gpu/mod.ts";
import { noGrad, ropeQK, Tensor } from "../tensor/mod.ts";
import { KvCache } from "./kv_cache.ts";

gpuTest(
  "KvCache.ropeAppend equals ropeQK + append bit for bit (repeat, non-zero length)",
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
    const fused = KvCache.create(opts), plain = KvCache.create(opts);
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
          plain.append(l, ke, v);
          const d0 = gpu().recorder.dispatches;
          const [qr] = fused.ropeAppend(l, { q: t(qs, Hq), k: t(ks, H), v, positions: pos }, rope);
          assert.equal(gpu().recorder.dispatches - d0, 1, "one dispatch");
          checks.push(Promise.all([qr.toArray(), qe.toArray()]));
        }
      });
      fused.advance(len);
      plain.advance(len);
    }
    for (const pair of await Promise.all(checks)) assert.deepEqual(pair[0], pair[1], "q");
    for (let l = 0; l < 2; l++) {
      assert.deepEqual(await fused.keys[l].toArray(), await plain.keys[l].toArray(), `keys ${l}`);
      assert.deepEqual(
        await fused.values[l].toArray(),
        await plain.values[l].toArray(),
        `values ${l}`,
      );
    }
    fused.dispose();
    plain.dispose();
  },
);
