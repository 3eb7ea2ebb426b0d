import assert from "node:assert/strict";
import { gpuTest, randomArray } from "../../testing/mod.ts";
import { gpu } from "../../gpu/mod.ts";
import { noGrad } from "../grad_mode.ts";
import { Tensor } from "../tensor.ts";
import { qkvLinear } from "./qkv_linear.ts";
import { pagedRopeQKIntoCache } from "./paged_rope_cache.ts";
import { type QkvSplits, ropeFromSplitsFits, ropeQKIntoCache } from "./rope_cache.ts";

// q/k/v from a split qkv_linear's partials, rotated and cached in the split sum's pass, against
// the split sum then the rotation: every output bit for bit, one dispatch less.

const [Hq, H, D, K] = [4, 2, 8, 32];
const TILE = { wgX: 4, wgY: 4, tm: 1, bk: 8 }; // small: the production tiles compile slowly on CPU

interface Case {
  rows: number;
  splits: number;
  bias: boolean;
  dtype: "f32" | "f16";
  paged: boolean;
}

/** Runs one case both ways; returns the dispatches each took and every output. */
async function run(c: Case, fused: boolean) {
  const m = c.rows;
  const x = Tensor.from(randomArray(m * K, 1), [m, K]);
  const w = [Hq * D, H * D, H * D].map((n, i) => Tensor.from(randomArray(n * K, 2 + i), [n, K]));
  const b = c.bias
    ? [Hq * D, H * D, H * D].map((n, i) => Tensor.from(randomArray(n, 5 + i), [n]))
    : [null, null, null];
  const positions = Tensor.from(Int32Array.from({ length: m }, (_, i) => 3 + 5 * i), [m, 1], "i32");
  // contiguous: [m, 4, H, D] at time 2; paged: blocks of 4 positions, row r at key 4 r + 1
  const shape = c.paged ? [2 * m + 1, 4, H, D] : [m, 4, H, D];
  const keys = Tensor.from(randomArray(shape.reduce((a, v) => a * v), 9), shape, c.dtype);
  const values = Tensor.from(randomArray(keys.size, 10), shape, c.dtype);
  const table = Tensor.from(
    Int32Array.from({ length: m * 2 }, (_, i) => i % 2 === 0 ? 2 : 2 * (i >> 1) + 1),
    [m, 2],
    "i32",
  );
  const rope = { theta: 1e4 };
  const rotate = (q: Tensor, k: Tensor, v: Tensor, splits?: QkvSplits) => {
    const [q4, k4, v4] = [
      q.reshape([m, 1, Hq, D]),
      k.reshape([m, 1, H, D]),
      v.reshape([m, 1, H, D]),
    ];
    return c.paged
      ? pagedRopeQKIntoCache(q4, k4, v4, positions, {
        ...rope,
        cache: { keys, values, table },
        splits,
      })
      : ropeQKIntoCache(q4, k4, v4, positions, {
        ...rope,
        cache: { keys, values, start: 2 },
        splits,
      });
  };
  const d0 = gpu().recorder.dispatches;
  const [q, k, v] = noGrad(() => {
    const biases = b[0] ? [b[0], b[1]!, b[2]!] as const : null;
    const outs = qkvLinear(x, [w[0], w[1], w[2]], [b[0], b[1], b[2]], {
      config: TILE,
      splits: c.splits,
      sum: fused
        ? (part, splits, [q, k, v]) => void rotate(q, k, v, { part, splits, biases })
        : undefined,
    });
    if (!fused) rotate(...outs);
    return outs;
  });
  const dispatches = gpu().recorder.dispatches - d0;
  const out = await Promise.all([q, k, v, keys, values].map((t) => t.toArray()));
  return { dispatches, out };
}

gpuTest("the rotation from split partials equals the split sum then the rotation", async () => {
  const cases: Case[] = [
    { rows: 3, splits: 2, bias: true, dtype: "f32", paged: false },
    { rows: 2, splits: 3, bias: false, dtype: "f16", paged: false },
    { rows: 3, splits: 4, bias: true, dtype: "f16", paged: true },
    { rows: 1, splits: 2, bias: false, dtype: "f32", paged: true },
  ];
  if (!ropeFromSplitsFits()) {
    // Too few storage buffers a stage: the rotation refuses partials (decoding keeps the sum).
    await assert.rejects(() => run(cases[0], true), /on a device binding 12 storage buffers/);
    return;
  }
  for (const c of cases) {
    const label = JSON.stringify(c);
    const plain = await run(c, false), fused = await run(c, true);
    assert.equal(fused.dispatches, plain.dispatches - 1, `one dispatch less, ${label}`);
    ["q", "k", "v", "keys", "values"].forEach((name, i) =>
      assert.deepEqual(fused.out[i], plain.out[i], `${name} ${label}`)
    );
  }
});

gpuTest("the rotation from split partials names partials that do not fit", () => {
  const q = Tensor.from(randomArray(Hq * D, 1), [1, 1, Hq, D]);
  const k = Tensor.from(randomArray(H * D, 2), [1, 1, H, D]);
  const v = Tensor.from(randomArray(H * D, 3), k.shape);
  const keys = Tensor.empty([1, 4, H, D]), values = Tensor.empty([1, 4, H, D]);
  const rotate = (splits: QkvSplits) =>
    noGrad(() =>
      ropeQKIntoCache(q, k, v, Tensor.from([3], [1, 1], "i32"), {
        theta: 1e4,
        cache: { keys, values, start: 0 },
        splits,
      })
    );
  const part = Tensor.empty([2, 1, (Hq + H) * D]); // v's columns missing
  assert.throws(
    () => rotate({ part, splits: 2, biases: null }),
    /expected part f32 \[2, 1, 64\].*got part \[2, 1, 48\] f32, biases none/,
  );
  const bias = (n: number) => Tensor.from(randomArray(n, n), [n]);
  const biases = [bias(Hq * D), bias(H * D + 1), bias(H * D)] as const;
  assert.throws(
    () => rotate({ part: Tensor.empty([2, 1, 64]), splits: 2, biases }),
    /biases \[32\], \[16\], \[16\].*biases \[32\] f32, \[17\] f32, \[16\] f32/,
  );
});
