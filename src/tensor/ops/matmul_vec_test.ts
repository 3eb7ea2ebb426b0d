import assert from "node:assert/strict";
import { gpu } from "../../gpu/mod.ts";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import * as ref from "../ref/matmul.ts";
import { roundToF16 } from "../half.ts";
import { Tensor } from "../tensor.ts";
import { matmulCat } from "./matmul_cat.ts";
import { product } from "./test_matmul_cat.ts";
import {
  exactBlocks,
  gemmLayout,
  gemmNew,
  loadPolicy,
  type TileForm,
  tileForms,
  type TileName,
  TILES,
  vecReads,
} from "./matmul_kernel.ts";

const TRANSPOSES = [[false, false], [true, false], [false, true], [true, true]] as const;
const TOL = { atol: 1e-4, rtol: 1e-4 };

/** Runs `make` with one of the tile's read policies on and off; returns both outputs. */
async function bothWays(
  make: () => Tensor,
  policy: keyof typeof loadPolicy = "vec4",
): Promise<[Float32Array, Float32Array]> {
  const out: Float32Array[] = [];
  for (const on of [true, false]) {
    loadPolicy[policy] = on;
    try {
      const t = make();
      out.push(Float32Array.from(await t.toArray()));
      t.dispose();
    } finally {
      loadPolicy[policy] = true;
    }
  }
  return [out[0], out[1]];
}

gpuTest(
  "vecReads takes an operand along its contiguous dimension when it is a multiple of 4",
  () => {
    const d = {
      batch: 1,
      m: 20,
      n: 36,
      k: 44,
      transA: false,
      transB: true,
      strideA: 0,
      strideB: 0,
    };
    assert.deepEqual(vecReads(d, null), { a: true, b: true });
    // Read along k, A needs K % 4; transposed it is read along M.
    assert.deepEqual(vecReads({ ...d, k: 42 }, null), { a: false, b: false });
    assert.deepEqual(vecReads({ ...d, k: 42, transA: true, transB: false }, null), {
      a: true,
      b: true,
    });
    assert.deepEqual(vecReads({ ...d, m: 21, transA: true }, null), { a: false, b: true });
    // A batch stride off the 4-element grid keeps scalar reads.
    assert.deepEqual(vecReads({ ...d, batch: 2, strideA: 882 }, null), { a: false, b: true });
    // A K-joined pair needs both laid out alike and, along k, K2 % 4 as well.
    const cat = (k: number, transA: boolean, transB: boolean) => ({
      a: Tensor.empty([1]),
      b: Tensor.empty([1]),
      k,
      transA,
      transB,
      scale: 1,
    });
    assert.deepEqual(vecReads(d, cat(8, false, true)), { a: true, b: true });
    assert.deepEqual(vecReads(d, cat(6, false, true)), { a: false, b: false });
    assert.deepEqual(vecReads(d, cat(8, true, true)), { a: false, b: true });
    loadPolicy.vec4 = false;
    try {
      assert.deepEqual(vecReads(d, null), { a: false, b: false });
    } finally {
      loadPolicy.vec4 = true;
    }
  },
);

gpuTest(
  "vec4 reads give the scalar reads' products bit for bit (every transpose, splits, batches)",
  async () => {
    // [batch, m, n, k, splits, tile]: edges inside a tile, a split ending mid-stage, a batch with
    // strides, and one dimension off the grid (K = 42: A and B read along k fall back alone).
    const cases: [number, number, number, number, number, TileName][] = [
      [1, 20, 36, 44, 1, "small"],
      [1, 132, 12, 28, 1, "medium"],
      [1, 12, 68, 200, 3, "small"],
      [3, 8, 12, 16, 1, "small"],
      [1, 24, 40, 42, 1, "small"],
    ];
    if (!gpu().isCpuAdapter) cases.push([1, 136, 132, 24, 1, "large"]);
    let seed = 300;
    for (const [batch, m, n, k, splits, tile] of cases) {
      for (const [transA, transB] of TRANSPOSES) {
        const d = { batch, m, n, k, transA, transB };
        const aShape = [batch, ...(transA ? [k, m] : [m, k])];
        const bShape = [batch, ...(transB ? [n, k] : [k, n])];
        const a = randomArray(batch * m * k, seed += 2), b = randomArray(batch * n * k, seed + 1);
        const A = Tensor.from(a, aShape), B = Tensor.from(b, bShape);
        const gemm = { ...d, strideA: m * k, strideB: n * k };
        const label = JSON.stringify({ ...d, splits, tile, vec: vecReads(gemm, null) });
        const [on, off] = await bothWays(() =>
          gemmNew(A, B, [batch, m, n], gemm, { tile, ...(batch === 1 ? { splits } : {}) })
        );
        assert.deepEqual(on, off, label);
        assertClose(on, ref.matmul(a, b, d), { ...TOL, label });
        A.dispose();
        B.dispose();
      }
    }
  },
);

gpuTest("vec4 reads of f16 operands", async () => {
  const [m, n, k] = [28, 44, 36];
  for (const [transA, transB] of TRANSPOSES) {
    const d = { batch: 1, m, n, k, transA, transB };
    const a = randomArray(m * k, 41), b = Float32Array.from(randomArray(n * k, 42), roundToF16);
    const A = Tensor.from(a, transA ? [k, m] : [m, k]);
    const B = Tensor.from(b, transB ? [n, k] : [k, n], "f16");
    const gemm = { ...d, strideA: 0, strideB: 0 };
    const [on, off] = await bothWays(() => gemmNew(A, B, [m, n], gemm, { tile: "small" }));
    const label = JSON.stringify(d);
    assert.deepEqual(on, off, label);
    assertClose(on, ref.matmul(a, b, d), { ...TOL, label });
    A.dispose();
    B.dispose();
  }
}, { f16: true });

gpuTest(
  "vec4 reads of a K-joined product equal its scalar reads (LoRA's layouts, split seam)",
  async () => {
    // [m, n, k1, k2, transA, transB, splits]: the LoRA forward [x | l] @ [W | s B]^T and input
    // gradient [g | gl] @ [W ; A] layouts, a split that ends inside the second product, and K2 = 6
    // (read along k: scalar reads).
    const cases: [number, number, number, number, boolean, boolean, number][] = [
      [20, 36, 44, 8, false, true, 1],
      [20, 36, 44, 8, false, false, 1],
      [12, 16, 40, 12, false, true, 3],
      [16, 20, 24, 8, true, false, 2],
      [12, 16, 40, 6, false, true, 1],
    ];
    let seed = 500;
    for (const [m, n, k1, k2, transA, transB, splits] of cases) {
      const p1 = product(m, n, k1, transA, transB, seed += 2);
      const p2 = product(m, n, k2, transA, transB, seed += 2);
      const label = JSON.stringify({ m, n, k1, k2, transA, transB, splits });
      const [on, off] = await bothWays(() =>
        matmulCat(p1.tensors, p2.tensors, { scale: 0.5, tile: "small", splits })
      );
      assert.deepEqual(on, off, label);
      assertClose(on, ref.matmulCat(p1.arrays, p2.arrays, { m, n, scale: 0.5 }), { ...TOL, label });
    }
  },
);

gpuTest("exactBlocks holds only where M, N and the whole K are multiples of the block's", () => {
  const small = TILES.small; // 32 x 32 blocks, K step 8
  assert.equal(exactBlocks({ m: 64, n: 32 }, 48, small), true);
  assert.equal(exactBlocks({ m: 64, n: 36 }, 48, small), false);
  assert.equal(exactBlocks({ m: 60, n: 32 }, 48, small), false);
  assert.equal(exactBlocks({ m: 64, n: 32 }, 44, small), false);
  loadPolicy.exact = false;
  try {
    assert.equal(exactBlocks({ m: 64, n: 32 }, 48, small), false);
  } finally {
    loadPolicy.exact = true;
  }
});

gpuTest(
  "whole blocks without bounds checks give the checked products bit for bit",
  async () => {
    // [batch, m, n, k, splits, tile, f16 B]: every transpose, a split K, a batch, f16 weights.
    const cases: [number, number, number, number, number, TileName, boolean][] = [
      [1, 64, 32, 48, 1, "small", false],
      [1, 32, 64, 64, 3, "small", false],
      [2, 32, 32, 24, 1, "small", false],
      [1, 64, 64, 40, 1, "medium", false],
    ];
    if (gpu().hasF16) cases.push([1, 32, 64, 32, 1, "small", true]);
    let seed = 700;
    for (const [batch, m, n, k, splits, tile, half] of cases) {
      assert.ok(exactBlocks({ m, n }, k, TILES[tile]));
      for (const [transA, transB] of TRANSPOSES) {
        const d = { batch, m, n, k, transA, transB };
        const a = randomArray(batch * m * k, seed += 2);
        let b = randomArray(batch * n * k, seed + 1);
        if (half) b = Float32Array.from(b, roundToF16);
        const A = Tensor.from(a, [batch, ...(transA ? [k, m] : [m, k])]);
        const B = Tensor.from(b, [batch, ...(transB ? [n, k] : [k, n])], half ? "f16" : "f32");
        const gemm = { ...d, strideA: m * k, strideB: n * k };
        const label = JSON.stringify({ ...d, splits, tile, half });
        const [on, off] = await bothWays(
          () => gemmNew(A, B, [batch, m, n], gemm, { tile, ...(batch === 1 ? { splits } : {}) }),
          "exact",
        );
        assert.deepEqual(on, off, label);
        assertClose(on, ref.matmul(a, b, d), { ...TOL, label });
        A.dispose();
        B.dispose();
      }
    }
  },
);

gpuTest("whole blocks of a K-joined product without bounds checks (LoRA's layouts)", async () => {
  // [m, n, k1, k2, transA, transB, splits]: the seam inside a K step, and a split across it.
  const cases: [number, number, number, number, boolean, boolean, number][] = [
    [32, 64, 40, 8, false, true, 1],
    [64, 32, 36, 12, false, false, 2],
    [32, 32, 16, 16, true, false, 1],
  ];
  let seed = 900;
  for (const [m, n, k1, k2, transA, transB, splits] of cases) {
    assert.ok(exactBlocks({ m, n }, k1 + k2, TILES.small));
    const p1 = product(m, n, k1, transA, transB, seed += 2);
    const p2 = product(m, n, k2, transA, transB, seed += 2);
    const label = JSON.stringify({ m, n, k1, k2, transA, transB, splits });
    const [on, off] = await bothWays(
      () => matmulCat(p1.tensors, p2.tensors, { scale: 0.5, tile: "small", splits }),
      "exact",
    );
    assert.deepEqual(on, off, label);
    assertClose(on, ref.matmulCat(p1.arrays, p2.arrays, { m, n, scale: 0.5 }), { ...TOL, label });
  }
});

gpuTest("every form of the K loop gives the default form's products bit for bit", async () => {
  // Forms unlike each layout's own in a check and in the reads' place, on whole blocks (where
  // unchecked loads apply) and ragged edges, with a K of 5 stages and one of a partial stage.
  const forms: TileForm[] = [
    { exactA: false, exactB: true, fetchAt: 4 },
    { exactA: true, exactB: false, fetchAt: 0 },
  ];
  const shapes: [number, number, number][] = [[64, 64, 40], [20, 36, 44]];
  let seed = 1100;
  for (const [m, n, k] of shapes) {
    for (const [transA, transB] of TRANSPOSES) {
      const layout = gemmLayout({ transA, transB });
      const a = randomArray(m * k, seed += 2), b = randomArray(n * k, seed + 1);
      const A = Tensor.from(a, transA ? [k, m] : [m, k]);
      const B = Tensor.from(b, transB ? [n, k] : [k, n]);
      const d = { batch: 1, m, n, k, transA, transB, strideA: 0, strideB: 0 };
      const run = async () => {
        const c = gemmNew(A, B, [m, n], d, { tile: "medium" });
        const out = Float32Array.from(await c.toArray());
        c.dispose();
        return out;
      };
      const base = await run();
      const saved = tileForms[layout];
      try {
        for (const form of forms) {
          tileForms[layout] = form;
          assert.deepEqual(await run(), base, JSON.stringify({ m, n, k, layout, form }));
        }
      } finally {
        tileForms[layout] = saved;
      }
      assertClose(base, ref.matmul(a, b, { ...d }), { ...TOL, label: layout });
      A.dispose();
      B.dispose();
    }
  }
});
