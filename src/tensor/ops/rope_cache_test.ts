import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import { gpu } from "../../gpu/mod.ts";
import { noGrad } from "../grad_mode.ts";
import { Tensor } from "../tensor.ts";
import { ropeQKRef } from "../ref/rope.ts";
import { ropeQK } from "./rope.ts";
import { ropeQKIntoCache } from "./rope_cache.ts";

gpuTest(
  "ropeQKIntoCache: ropeQK's q and k bit for bit, caches written at start, r rows each",
  async () => {
    // [source rows, T, Hq, Hkv, D, repeat, start, Smax]
    const cases = [[2, 3, 4, 2, 8, 2, 0, 6], [3, 1, 3, 1, 6, 1, 4, 7], [1, 2, 2, 2, 4, 3, 2, 5]];
    for (const [Bs, T, Hq, H, D, r, start, S] of cases) {
      const label = `Bs${Bs} T${T} Hq${Hq} Hkv${H} D${D} r${r} start${start}`;
      const qs = randomArray(Bs * T * Hq * D, 1), ks = randomArray(Bs * T * H * D, 2);
      const vs = randomArray(ks.length, 3);
      const ps = Int32Array.from({ length: Bs * T }, (_, i) => 7 + 13 * i);
      const before = randomArray(Bs * r * S * H * D, 4);
      const pos = Tensor.from(ps, [Bs, T], "i32");
      const [qe, ke] = ropeQK(
        Tensor.from(qs, [Bs, T, Hq, D]),
        Tensor.from(ks, [Bs, T, H, D]),
        pos,
        {
          theta: 1e4,
        },
      );
      const q = Tensor.from(qs, [Bs, T, Hq, D]), k = Tensor.from(ks, [Bs, T, H, D]);
      const keys = Tensor.from(before, [Bs * r, S, H, D]), values = Tensor.from(before, keys.shape);
      const d0 = gpu().recorder.dispatches;
      const [qr, kr] = noGrad(() =>
        ropeQKIntoCache(q, k, Tensor.from(vs, k.shape), pos, {
          theta: 1e4,
          cache: { keys, values, start },
        })
      );
      assert.equal(gpu().recorder.dispatches - d0, 1, `one dispatch, ${label}`);
      assert.equal(qr, q, "q is rotated in place");
      assert.deepEqual(await qr.toArray(), await qe.toArray(), `q ${label}`);
      assert.deepEqual(await kr.toArray(), await ke.toArray(), `k ${label}`);
      const shapes = { q: [Bs, T, Hq, D], k: [Bs, T, H, D] } as const;
      const [qRef, kRef] = ropeQKRef(qs, ks, ps, shapes, { theta: 1e4 });
      assertClose(await qr.toArray(), qRef, { atol: 5e-7, rtol: 0, label: `q ref ${label}` });
      // The CPU cache write: row b, times start .. start + T - 1 take source row floor(b / r).
      const row = H * D, wantK = before.slice(), wantV = before.slice();
      for (let b = 0; b < Bs * r; b++) {
        for (let t = 0; t < T; t++) {
          const src = (Math.floor(b / r) * T + t) * row, dst = (b * S + start + t) * row;
          wantK.set(kRef.subarray(src, src + row), dst);
          wantV.set(vs.subarray(src, src + row), dst);
        }
      }
      assertClose(await keys.toArray(), wantK, { atol: 5e-7, rtol: 0, label: `keys ${label}` });
      assert.deepEqual(await values.toArray(), wantV, `values ${label}`);
    }
  },
);

gpuTest("ropeQKIntoCache refuses mismatched caches, overflow and gradients", () => {
  const q = Tensor.from(randomArray(2 * 2 * 4, 1), [2, 1, 2, 4]);
  const k = Tensor.from(randomArray(2 * 4, 2), [2, 1, 1, 4]);
  const pos = Tensor.from(new Int32Array(2), [2, 1], "i32");
  const keys = Tensor.empty([3, 4, 1, 4], "f32"), values = Tensor.empty([3, 4, 1, 4], "f32");
  const call = (cache: { keys: Tensor; values: Tensor; start: number }) => () =>
    noGrad(() => ropeQKIntoCache(q, k, k, pos, { theta: 1e4, cache }));
  assert.throws(call({ keys, values, start: 0 }), /for a whole r; got .* caches \[3, 4, 1, 4\]/);
  const k4 = Tensor.empty([4, 4, 1, 4], "f32"), v4 = Tensor.empty([4, 4, 1, 4], "f32");
  assert.throws(
    call({ keys: k4, values: v4, start: 4 }),
    /1 positions from 4 exceed the cache's 4/,
  );
  q.requiresGrad = true;
  assert.throws(
    () => ropeQKIntoCache(q, k, k, pos, { theta: 1e4, cache: { keys: k4, values: v4, start: 0 } }),
    /inference only/,
  );
});

gpuTest("ropeQKIntoCache into f16 caches: the f32 write's values rounded to halves", async () => {
  // [source rows, T, Hq, Hkv, D, repeat, start, Smax]
  for (
    const [Bs, T, Hq, H, D, r, start, S] of [[2, 3, 4, 2, 8, 2, 1, 6], [1, 1, 2, 1, 4, 3, 0, 2]]
  ) {
    const label = `Bs${Bs} T${T} Hq${Hq} Hkv${H} D${D} r${r} start${start}`;
    const qs = randomArray(Bs * T * Hq * D, 5), ks = randomArray(Bs * T * H * D, 6);
    const vs = randomArray(ks.length, 7);
    const pos = Tensor.from(
      Int32Array.from({ length: Bs * T }, (_, i) => 3 + 11 * i),
      [Bs, T],
      "i32",
    );
    const before = randomArray(Bs * r * S * H * D, 8);
    const write = (dtype: "f32" | "f16") => {
      const keys = Tensor.from(before, [Bs * r, S, H, D], dtype);
      const values = Tensor.from(before, keys.shape, dtype);
      const [q, k] = noGrad(() =>
        ropeQKIntoCache(
          Tensor.from(qs, [Bs, T, Hq, D]),
          Tensor.from(ks, [Bs, T, H, D]),
          Tensor.from(vs, [Bs, T, H, D]),
          pos,
          { theta: 1e4, cache: { keys, values, start } },
        )
      );
      return Promise.all([q, k, keys, values].map((t) => t.toArray()));
    };
    const [q32, k32, keys32, values32] = await write("f32");
    const [q16, k16, keys16, values16] = await write("f16");
    assert.deepEqual(q16, q32, `q ${label}`);
    assert.deepEqual(k16, k32, `k ${label}`);
    // Halves carry 11 significant bits: within 2^-11 relative of the f32 values, never equal to
    // them all (the inputs are random f32).
    assertClose(keys16, keys32, { atol: 1e-7, rtol: 2 ** -11, label: `keys ${label}` });
    assertClose(values16, values32, { atol: 1e-7, rtol: 2 ** -11, label: `values ${label}` });
    assert.ok(keys16.some((x, i) => x !== keys32[i]), `keys ${label} are rounded`);
  }
});
