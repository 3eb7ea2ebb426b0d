import assert from "node:assert/strict";
import { gpuTest, randomArray } from "../../testing/mod.ts";
import { Tensor } from "../tensor.ts";
import { colsum, colsumChunk } from "./colsum.ts";
import { sumSplits } from "./matmul_skinny.ts";

/**
 * Partials [splits, size] whose sums depend on the order of the adds: magnitudes from 1e-3 to 1e7
 * with random signs, so that any other grouping than split order changes many results.
 */
function partials(splits: number, size: number, seed: number): Float32Array {
  const u = randomArray(splits * size, seed), e = randomArray(splits * size, seed + 1);
  return u.map((x, i) => Math.sign(x || 1) * 10 ** (2 + 5 * e[i]));
}

/** Split order in f32: ((p0 + p1) + p2) + ..., then the bias, then the residual. */
function sequential(
  part: Float32Array,
  d: { m: number; n: number; splits: number; bias?: Float32Array; resid?: Float32Array },
): Float32Array {
  const size = d.m * d.n;
  return Float32Array.from({ length: size }, (_, i) => {
    let s = 0;
    for (let k = 0; k < d.splits; k++) s = Math.fround(s + part[k * size + i]);
    if (d.bias) s = Math.fround(s + d.bias[i % d.n]);
    if (d.resid) s = Math.fround(s + d.resid[i]);
    return s;
  });
}

gpuTest("split-K sums add the splits in order, bit for bit (1 to 9 splits)", async () => {
  const [m, n] = [5, 37];
  for (let splits = 1; splits <= 9; splits++) {
    const p = partials(splits, m * n, 10 * splits);
    const bias = randomArray(n, 3), resid = randomArray(m * n, 4);
    const part = Tensor.from(p, [splits, m, n]);
    for (
      const [withBias, withResid] of [[false, false], [true, false], [false, true], [true, true]]
    ) {
      const out = Tensor.empty([m, n], "f32", "sum");
      sumSplits(part, out, {
        m,
        n,
        splits,
        bias: withBias ? Tensor.from(bias, [n]) : null,
        residual: withResid ? Tensor.from(resid, [m, n]) : null,
      });
      const want = sequential(p, {
        m,
        n,
        splits,
        bias: withBias ? bias : undefined,
        resid: withResid ? resid : undefined,
      });
      assert.deepEqual(await out.toArray(), want, JSON.stringify({ splits, withBias, withResid }));
    }
  }
});

/** Thread row r of a pass adds rows r, r + 8, ... of [r0, r1) in turn; then the thread rows. */
function threadRowSum(p: Float32Array, cols: number, j: number, r0: number, r1: number): number {
  const threadRows = 8; // matmul_kernel.ts's ROWS
  let t = 0;
  for (let r = 0; r < threadRows; r++) {
    let s = 0;
    for (let i = r0 + r; i < r1; i += threadRows) s = Math.fround(s + p[i * cols + j]);
    t = Math.fround(t + s);
  }
  return t;
}

gpuTest(
  "colsum adds each thread row's rows in order, then the thread rows, then the chunks, bit for bit",
  async () => {
    let chunked = 0;
    const shapes = [[0, 5], [1, 37], [7, 37], [33, 37], [70, 37], [300, 37], [1000, 70]];
    for (const [rows, cols] of shapes) {
      const p = partials(rows, cols, rows);
      const got = await colsum(Tensor.from(p, [rows, cols]), rows, cols, [cols]).toArray();
      const chunk = colsumChunk(rows, cols);
      const chunks = rows > 0 ? Math.ceil(rows / chunk) : 1; // no rows: zeros
      if (chunks > 1) chunked++;
      // first pass: each chunk's sums; second (with more than one chunk): the chunks' sums
      const part = new Float32Array(chunks * cols);
      for (let z = 0; z < chunks; z++) {
        for (let j = 0; j < cols; j++) {
          part[z * cols + j] = threadRowSum(p, cols, j, z * chunk, Math.min(rows, (z + 1) * chunk));
        }
      }
      const want = chunks === 1
        ? part
        : Float32Array.from({ length: cols }, (_, j) => threadRowSum(part, cols, j, 0, chunks));
      assert.deepEqual(got, want, `rows ${rows}, cols ${cols}, chunk ${chunk}`);
    }
    assert.equal(chunked, 2, "the two tallest shapes are summed in row chunks");
  },
);
