/**
 * The tiled GEMM's f16 partial sums (`halfSums`, HALF_SUMS in shaders/matmul.wgsl) against the
 * CPU reference that rounds as the kernel does, and `linear`'s policy of when to use them. The GPU
 * cases need shader-f16 (ignored on the CPU adapter).
 */
import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import * as ref from "../ref/matmul.ts";
import { Tensor } from "../tensor.ts";
import { cast } from "./elementwise.ts";
import { linear } from "./matmul.ts";
import { halfSumsPolicy, TILES } from "./matmul_kernel.ts";

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) =>
  Array.from(a).reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

Deno.test("linearHalfSums reference: f16 steps differ from f32 sums, exact data agrees", () => {
  const rows = 3, inF = 20, outF = 4, bk = 8;
  const x = randomArray(rows * inF, 1), w = randomArray(outF * inF, 2);
  const half = ref.linearHalfSums(x, w, { rows, inF, outF, bk });
  const f32 = ref.linear(ref.roundedF16(x), ref.roundedF16(w), null, rows, inF, outF);
  assert.ok(maxDiff(half, f32) > 1e-5, "f16 partial sums round");
  assert.ok(maxDiff(half, f32) < 1e-2);
  const exact = (n: number, s: number) =>
    Float32Array.from(randomArray(n, s), (v) => Math.round(v * 4) / 4);
  const xe = exact(rows * inF, 3), we = exact(outF * inF, 4);
  assert.deepEqual(
    ref.linearHalfSums(xe, we, { rows, inF, outF, bk }),
    ref.linear(xe, we, null, rows, inF, outF),
  );
});

gpuTest(
  "linear of a frozen f16 weight under halfSumsPolicy: f16 partial sums, as the reference",
  async () => {
    // More rows than the skinny kernel takes, K with a partial last step.
    const rows = 150, inF = 44, outF = 24, bk = TILES.large.bk;
    const x = randomArray(rows * inF, 5), w = randomArray(outF * inF, 6);
    const W = cast(Tensor.from(w, [outF, inF]), "f16");
    const X = Tensor.from(x, [rows, inF]);
    const f32 = ref.linear(ref.roundedF16(x), ref.roundedF16(w), null, rows, inF, outF);
    const half = ref.linearHalfSums(x, w, { rows, inF, outF, bk });
    const saved = halfSumsPolicy.frozenF16Weights;
    try {
      halfSumsPolicy.frozenF16Weights = true;
      const y = await linear(X, W).toArray();
      assertClose(y, half, { atol: 1e-6, rtol: 1e-6, label: "half sums" });
      assert.ok(maxDiff(y, f32) > 1e-5, "the product really summed in f16");
      // A weight that trains keeps f32 sums.
      W.requiresGrad = true;
      assertClose(await linear(X, W).toArray(), f32, { atol: 1e-5, rtol: 1e-5, label: "trains" });
      W.requiresGrad = false;
      halfSumsPolicy.frozenF16Weights = false;
      assertClose(await linear(X, W).toArray(), f32, { atol: 1e-5, rtol: 1e-5, label: "off" });
    } finally {
      halfSumsPolicy.frozenF16Weights = saved;
    }
  },
  { f16: true },
);
