import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import * as ref from "../ref/matmul.ts";
import { Tensor } from "../tensor.ts";
import { type Gemm, gemmNew, type GemmOptions, type TileName } from "./matmul_kernel.ts";
import type { SplitTail } from "./matmul_splits.ts";

interface Case {
  m: number;
  n: number;
  k: number;
  transA: boolean;
  transB: boolean;
  tile: TileName;
  tail: SplitTail;
  bias: boolean;
  residual: boolean;
}

// Sizes that leave the last block ragged; tails whose first row or column keeps the sum's
// bindings on 256-byte offsets (the strictest alignment WebGPU allows a device to ask for).
const CASES: Case[] = [
  // 4 x 3 blocks of 32: the last two rows of blocks (rows 64..99) apart, K in 3 slices
  {
    m: 100,
    n: 70,
    k: 40,
    transA: false,
    transB: true,
    tile: "small",
    bias: true,
    residual: true,
    tail: { along: "m", blocks: 2, splits: 3 },
  },
  // op(A) transposed, the last two columns of blocks (columns 64..99) apart
  {
    m: 70,
    n: 100,
    k: 40,
    transA: true,
    transB: false,
    tile: "small",
    bias: false,
    residual: false,
    tail: { along: "n", blocks: 2, splits: 2 },
  },
  // 8x8 per thread (two row and column groups), the last column of 64-wide blocks apart
  {
    m: 67,
    n: 150,
    k: 30,
    transA: false,
    transB: false,
    tile: "medium",
    bias: true,
    residual: false,
    tail: { along: "n", blocks: 1, splits: 2 },
  },
];

/** Row-major [m, n] elements of `y` where `inTail(i, j)` holds, or where it does not. */
function part(y: Float32Array, n: number, pick: (i: number, j: number) => boolean): number[] {
  return [...y].filter((_, e) => pick(Math.floor(e / n), e % n));
}

gpuTest(
  "a product's tail run apart: the head equals the whole product, the tail its split",
  async () => {
    let seed = 300;
    for (const c of CASES) {
      const { m, n, k, transA, transB, tile, tail } = c;
      const a = randomArray(m * k, seed++), b = randomArray(k * n, seed++);
      const bias = randomArray(n, seed++), resid = randomArray(m * n, seed++);
      const A = Tensor.from(a, transA ? [k, m] : [m, k]);
      const B = Tensor.from(b, transB ? [n, k] : [k, n]);
      const d: Gemm = { batch: 1, m, n, k, transA, transB, strideA: 0, strideB: 0 };
      const o: GemmOptions = {
        tile,
        bias: c.bias ? Tensor.from(bias, [n]) : null,
        residual: c.residual ? Tensor.from(resid, [m, n]) : null,
      };
      const label = JSON.stringify({ m, n, k, transA, transB, tile, tail });
      const y = await gemmNew(A, B, [m, n], d, { ...o, tail }).toArray() as Float32Array;
      const whole = await gemmNew(A, B, [m, n], d, { ...o, splits: 1 }).toArray() as Float32Array;
      const split = await gemmNew(A, B, [m, n], d, { ...o, splits: tail.splits })
        .toArray() as Float32Array;
      const size = tile === "small" ? 32 : 64;
      const lines = Math.ceil((tail.along === "m" ? m : n) / size);
      const first = (lines - tail.blocks) * size;
      const inTail = (i: number, j: number) => (tail.along === "m" ? i : j) >= first;
      // Same K slices, same order of adds: bit for bit in both parts.
      assert.deepEqual(
        part(y, n, (i, j) => !inTail(i, j)),
        part(whole, n, (i, j) => !inTail(i, j)),
      );
      assert.deepEqual(part(y, n, inTail), part(split, n, inTail), label);
      const want = ref.matmul(a, b, d).map((v, e) =>
        v + (c.bias ? bias[e % n] : 0) + (c.residual ? resid[e] : 0)
      );
      assertClose(y, want, { atol: 1e-4, rtol: 1e-4, label });
    }
  },
);

gpuTest("a K-joined product's tail run apart equals its split", async () => {
  const [m, n, k1, k2] = [50, 66, 24, 8];
  const A = Tensor.from(randomArray(m * k1, 320), [m, k1]);
  const B = Tensor.from(randomArray(n * k1, 321), [n, k1]);
  const cat = {
    a: Tensor.from(randomArray(m * k2, 322), [m, k2]),
    b: Tensor.from(randomArray(n * k2, 323), [n, k2]),
    k: k2,
    transA: false,
    transB: true,
    scale: 0.5,
  };
  const d: Gemm = { batch: 1, m, n, k: k1, transA: false, transB: true, strideA: 0, strideB: 0 };
  const tail: SplitTail = { along: "m", blocks: 1, splits: 2 };
  const y = await gemmNew(A, B, [m, n], d, { tile: "small", cat, tail }).toArray();
  const whole = await gemmNew(A, B, [m, n], d, { tile: "small", cat, splits: 1 }).toArray();
  const split = await gemmNew(A, B, [m, n], d, { tile: "small", cat, splits: 2 }).toArray();
  const at = 32 * n; // rows 32.. form the tail
  assert.deepEqual([...y.slice(0, at)], [...whole.slice(0, at)]);
  assert.deepEqual([...y.slice(at)], [...split.slice(at)]);
});

gpuTest("a tail that is not a strict part of the product is an error", () => {
  const A = Tensor.from(randomArray(64 * 8, 330), [64, 8]);
  const B = Tensor.from(randomArray(8 * 40, 331), [8, 40]);
  const d: Gemm = {
    batch: 1,
    m: 64,
    n: 40,
    k: 8,
    transA: false,
    transB: false,
    strideA: 0,
    strideB: 0,
  };
  assert.throws(
    () => gemmNew(A, B, [64, 40], d, { tile: "small", tail: { along: "m", blocks: 2, splits: 2 } }),
    /split tail needs between 1 and 1 of 2 lines of blocks along m, got 2/,
  );
  const batched = { ...d, batch: 2, strideA: 0, strideB: 0 };
  assert.throws(
    () =>
      gemmNew(A, B, [2, 64, 40], batched, {
        tile: "small",
        tail: { along: "n", blocks: 1, splits: 2 },
      }),
    /split tail needs a single product, got 2/,
  );
  const tail: SplitTail = { along: "m", blocks: 1, splits: 2 };
  assert.throws(
    () => gemmNew(A, B, [64, 40], d, { tile: "small", tail, splits: 3 }),
    /a split tail runs the rest whole, got splits 3/,
  );
  const causal = { ...d, m: 64, n: 64, causal: { kind: "scores" as const, period: 64, off: 0 } };
  const K = Tensor.from(randomArray(64 * 8, 332), [64, 8]);
  assert.throws(
    () => gemmNew(A, K, [64, 64], { ...causal, transB: true }, { tile: "small", tail }),
    /split tail needs no causal blocks/,
  );
});
