import assert from "node:assert/strict";
import { assertClose, finiteDiff, gpuTest, randomArray, rng } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { Tensor } from "../tensor.ts";
import { inverseIndexRef, selectRowsRef } from "../ref/select_rows.ts";
import { selectRows } from "./select_rows.ts";

/** An injective index of M rows out of N (some entries -1), seeded. */
function randomIndex(M: number, N: number, seed: number): Int32Array {
  const r = rng(seed);
  const order = Array.from({ length: N }, (_, i) => i).sort(() => r() - 0.5);
  return Int32Array.from({ length: M }, (_, m) => (m < N && r() < 0.8 ? order[m] : -1));
}

// [N, C, M]: C below and above the workgroup, M * C not a multiple of 256, M < N and M > N
const CASES: [number, number, number][] = [[1, 1, 1], [7, 5, 4], [3, 300, 5], [40, 13, 40]];

gpuTest("selectRows gathers f32 and i32 rows like the reference, zeros at -1", async () => {
  for (const [i, [N, C, M]] of CASES.entries()) {
    const index = randomIndex(M, N, 10 + i);
    const x = randomArray(N * C, 20 + i);
    const y = selectRows(Tensor.from(x, [N, C]), Tensor.from(index, [M], "i32"));
    assert.deepEqual(y.shape, [M, C]);
    assert.deepEqual([...await y.toArray()], [...selectRowsRef(x, index, C)]);
    const ids = Int32Array.from(x, (v) => Math.round(v * 1000));
    const yi = selectRows(Tensor.from(ids, [N, 1, C], "i32"), Tensor.from(index, [M], "i32"));
    assert.deepEqual(yi.shape, [M, 1, C]);
    assert.deepEqual([...await yi.toArray()], [...selectRowsRef(ids, index, C)]);
  }
});

gpuTest("selectRows gradient is the gather by the inverse index", async () => {
  for (const [i, [N, C, M]] of CASES.entries()) {
    const index = randomIndex(M, N, 30 + i);
    const inverse = inverseIndexRef(index, N);
    const x = Tensor.from(randomArray(N * C, 40 + i), [N, C]);
    x.requiresGrad = true;
    const g = randomArray(M * C, 50 + i);
    const y = selectRows(x, Tensor.from(index, [M], "i32"), {
      inverse: Tensor.from(inverse, [N], "i32"),
    });
    backward(y, Tensor.from(g, [M, C]));
    const got = await x.grad!.toArray() as Float32Array;
    assert.deepEqual([...got], [...selectRowsRef(g, inverse, C)], `case ${i}`);
    // the same gradient by finite differences of the reference
    const fd = finiteDiff((t) => {
      const out = selectRowsRef(Float32Array.from(t), index, C);
      return out.reduce((a, v, k) => a + v * g[k], 0);
    }, randomArray(N * C, 60 + i));
    assertClose(got, fd, { atol: 1e-3, rtol: 1e-3, label: `finite differences, case ${i}` });
  }
});

gpuTest("selectRows rejects bad inputs and a gradient without the inverse", () => {
  const x = Tensor.from(new Float32Array(6), [3, 2]);
  assert.throws(() => selectRows(x, Tensor.from([0], [1], "f32")), /index must be i32 \[M\]/);
  assert.throws(
    () => selectRows(x, Tensor.from([0], [1], "i32"), { inverse: Tensor.from([0], [1], "i32") }),
    /inverse must be i32 \[N\]/,
  );
  x.requiresGrad = true;
  assert.throws(() => selectRows(x, Tensor.from([0], [1], "i32")), /needs the inverse/);
  assert.throws(() => inverseIndexRef(Int32Array.from([1, 1]), 3), /not injective/);
});
