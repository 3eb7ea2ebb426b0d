/**
 * Mixed-precision products (`linear` and `lmHeadLogprob` with `half`): f16 operands, f32
 * accumulation, gradients to the f32 masters, against CPU references over f16-rounded operands.
 * The GPU cases need shader-f16 (ignored on the CPU adapter); the reference's rounding is checked
 * everywhere.
 */
import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import * as ref from "../ref/matmul.ts";
import { lmHeadLogprobBackwardRef, lmHeadLogprobRef } from "../ref/lm_head_logprob.ts";
import { roundToF16 } from "../half.ts";
import { Tensor } from "../tensor.ts";
import { cast } from "./elementwise.ts";
import { linear } from "./matmul.ts";
import { lmHeadLogprob } from "./lm_head_logprob.ts";

Deno.test("roundToF16: nearest half, ties to even, overflow to inf, underflow to subnormals", () => {
  assert.equal(roundToF16(1 + 2 ** -11), 1); // a tie goes to the even mantissa
  assert.equal(roundToF16(1 + 3 * 2 ** -11), 1 + 2 ** -9);
  assert.equal(roundToF16(0.1), 0.0999755859375);
  assert.equal(roundToF16(65519), 65504);
  assert.equal(roundToF16(65520), Infinity);
  assert.equal(roundToF16(-1e6), -Infinity);
  assert.equal(roundToF16(2 ** -24), 2 ** -24); // the smallest subnormal
  assert.equal(roundToF16(2 ** -26), 0);
  assert.ok(Number.isNaN(roundToF16(NaN)));
});

Deno.test("linearF16 reference: f16-exact operands give the f32 product, others are rounded", () => {
  const rows = 3, inF = 4, outF = 2;
  // multiples of 1/8 below 4 are exact halves
  const exact = (n: number, s: number) =>
    Float32Array.from(randomArray(n, s), (v) => Math.round(v * 8) / 8);
  const x = exact(rows * inF, 1), w = exact(outF * inF, 2), g = exact(rows * outF, 3);
  const r = ref.linearF16(x, w, g, { rows, inF, outF });
  assert.deepEqual(r.y, ref.linear(x, w, null, rows, inF, outF));
  const xs = Float32Array.from(x, (v) => v + 1e-4); // not representable in f16
  const r2 = ref.linearF16(xs, w, g, { rows, inF, outF });
  assert.deepEqual(r2.y, ref.linear(ref.roundedF16(xs), w, null, rows, inF, outF));
  assert.notDeepEqual(r2.y, ref.linear(xs, w, null, rows, inF, outF));
});

const TOL = { atol: 2e-5, rtol: 2e-5 };

gpuTest(
  "linear with an f16 weight copy: f16 operands, f32 accumulation, grads to the masters",
  async () => {
    for (
      const [rows, inF, outF, withBias, residual] of [
        [5, 12, 7, true, false],
        [33, 20, 9, false, true],
      ] as const
    ) {
      const x = randomArray(rows * inF, 11), w = randomArray(outF * inF, 12);
      const b = randomArray(outF, 13), g = randomArray(rows * outF, 14);
      const r = randomArray(rows * outF, 15);
      const X = Tensor.from(x, [rows, inF]), W = Tensor.from(w, [outF, inF]);
      const B = withBias ? Tensor.from(b, [outF]) : null;
      const R = residual ? Tensor.from(r, [rows, outF]) : null;
      for (const t of [X, W, B]) if (t) t.requiresGrad = true;
      const half = cast(W, "f16");
      half.requiresGrad = false;
      const y = linear(X, W, B, { half, residual: R });
      backward(y, Tensor.from(g, [rows, outF]));
      const e = ref.linearF16(x, w, g, { rows, inF, outF, bias: withBias ? b : null });
      if (residual) e.y.forEach((_, i) => (e.y[i] += r[i]));
      assertClose(await y.toArray(), e.y, { ...TOL, label: "y" });
      assertClose(await X.grad!.toArray(), e.dx, { ...TOL, label: "dx" });
      assertClose(await W.grad!.toArray(), e.dw, { ...TOL, label: "dW" });
      assert.equal(W.grad!.dtype, "f32");
      if (B) assertClose(await B.grad!.toArray(), e.db, { ...TOL, label: "db" });
    }
  },
  { f16: true },
);

gpuTest(
  "linear with half: an f16 input (a shared cast) takes an f32 gradient to its f32 source",
  async () => {
    const rows = 6, inF = 8, outF = 5;
    const x = randomArray(rows * inF, 21), w = randomArray(outF * inF, 22);
    const g = randomArray(rows * outF, 23);
    const X = Tensor.from(x, [rows, inF]);
    X.requiresGrad = true;
    const W = Tensor.from(w, [outF, inF]);
    const y = linear(cast(X, "f16"), W, null, { half: cast(W, "f16") });
    backward(y, Tensor.from(g, [rows, outF]));
    const e = ref.linearF16(x, w, g, { rows, inF, outF });
    assertClose(await X.grad!.toArray(), e.dx, { ...TOL, label: "dx" });
  },
  { f16: true },
);

gpuTest(
  "cast to f16 turns values past the f16 range into inf (a loss-scale overflow)",
  async () => {
    const x = Tensor.from([1, 65504, 65519, 65520, -1e6, 3e38], [6]);
    const h = await cast(x, "f16").toArray();
    assert.deepEqual([...h], [1, 65504, 65504, Infinity, -Infinity, Infinity]);
  },
  { f16: true },
);

gpuTest(
  "lmHeadLogprob with half: f16 logits, f16 logit gradients, dW to the f32 master",
  async () => {
    const N = 7, C = 12, V = 150;
    const h = randomArray(N * C, 31), w = randomArray(V * C, 32);
    const targets = Int32Array.from({ length: N }, (_, i) => (i * 37) % V);
    const gLp = randomArray(N, 33);
    for (const chunkBytes of [undefined, 64 * 4 * C]) {
      const H = Tensor.from(h, [N, C]), W = Tensor.from(w, [V, C]);
      H.requiresGrad = true;
      W.requiresGrad = true;
      const T = Tensor.from(targets, [N], "i32");
      const out = lmHeadLogprob(H, W, T, { half: cast(W, "f16"), chunkBytes });
      backward(out.logProbs, Tensor.from(gLp, [N]));
      const h16 = ref.roundedF16(h), w16 = ref.roundedF16(w);
      const e = lmHeadLogprobRef(h16, w16, targets);
      assertClose(await out.logProbs.toArray(), e.logProbs, {
        atol: 1e-4,
        rtol: 1e-4,
        label: "lp",
      });
      // the reference keeps the logit gradient in f64; the GPU rounds it to f16 (2^-11 relative)
      const eb = lmHeadLogprobBackwardRef(h16, w16, targets, gLp, null);
      const tol = { atol: 2e-3, rtol: 2e-3 };
      assertClose(await H.grad!.toArray(), eb.dHidden, { ...tol, label: "dh" });
      assertClose(await W.grad!.toArray(), eb.dWeight, { ...tol, label: "dW" });
    }
  },
  { f16: true },
);
