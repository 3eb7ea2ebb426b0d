/**
 * The GEMM attention kernels under f16 precision against their references (ref/attention_gemm.ts):
 * packing rounded to halves (into an f16 tensor or an f32 one) and unpacking rounded sums, the
 * masked softmax rounding P,
 * and the backward rows rounding P, dS and delta's factors. These kernels need no shader-f16, so
 * they run on every adapter.
 */
import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import { roundToF16 } from "../half.ts";
import { Tensor } from "../tensor.ts";
import {
  maskedSoftmaxRef,
  packHeadsRef,
  type RowRefDims,
  softmaxGradRef,
  unpackHeadsRef,
} from "../ref/attention_gemm.ts";
import { validate } from "./attention_common.ts";
import { rowGradInputs } from "./test_attention.ts";
import { maskedSoftmax, packHeads, softmaxGrad, unpackHeads } from "./attention_gemm_kernels.ts";

/** Values that test the rounding: ties both ways, the range's edges, subnormals, signs. */
const SPECIAL = [
  1 + 2 ** -11, // a tie: to the even 1
  1 + 3 * 2 ** -11, // a tie: up to the even neighbour
  0.1,
  1 / 3,
  -2.0001,
  65504, // the largest half
  65519, // rounds to 65504
  65520, // a tie past the largest half: +inf
  -65520,
  1e6,
  -3e38,
  2 ** -14, // the smallest normal half
  2 ** -14 * (1 - 2 ** -12), // rounds up to it
  6e-5, // subnormal halves
  -3.3e-6,
  2 ** -24, // the smallest subnormal
  2 ** -25, // a tie: to 0
  3 * 2 ** -25, // a tie: to 2^-23
  2.9e-8, // below half the smallest subnormal: 0
  -0,
];

// Every element of [B 2, R 4, Hkv 2, D 5]; pair 1's first 3 positions (an odd count).
const PACKINGS = [
  { c0: 0, nb: 4, Hkv: 2, G: 1, n: 4, R: 4, D: 5 },
  { c0: 1, nb: 1, Hkv: 2, G: 1, n: 3, R: 4, D: 5 },
];

gpuTest("attention GEMM packing under f16 rounds as roundToF16, into f16 and f32", async () => {
  for (const p of PACKINGS) {
    const src = randomArray(2 * 4 * 2 * 5, 3).map((v) => v * 4);
    src.set(SPECIAL);
    const x = Tensor.from(src, [2, 4, 2, 5]);
    const want = packHeadsRef(src, { ...p, half: true });
    assert.ok(want.some((v, i) => v !== packHeadsRef(src, p)[i]), "the values need rounding");
    const count = p.nb * p.n * p.D;
    const half = Tensor.empty([count], "f16"), f32 = Tensor.empty([count]);
    packHeads(x, half, p);
    packHeads(x, f32, p, true);
    const label = `pack n ${p.n}`;
    assertClose(await half.toArray(), want, { atol: 0, rtol: 0, label: `${label} to f16` });
    assertClose(await f32.toArray(), want, { atol: 0, rtol: 0, label: `${label} to f32` });
    // Unpacking rounds each sum of two partials: [nb, 2, n, D] back into the op layout.
    const partial = randomArray(2 * count, 5);
    partial.set(SPECIAL.map((v) => v / 2));
    const base = randomArray(src.length, 6), dst = Tensor.from(base, [2, 4, 2, 5]);
    unpackHeads(Tensor.from(partial, [2 * count]), dst, { ...p, parts: 2 }, true);
    const back = unpackHeadsRef(partial, base, { ...p, parts: 2, half: true });
    assertClose(await dst.toArray(), back, { atol: 0, rtol: 0, label: `un${label}` });
  }
});

/**
 * Rounded kernel outputs against the reference: each a half (dS over the scale, a power of two
 * here), within one half's ulp, and mostly the very same half (they differ only where the GPU's
 * f32 value and the f64 reference's fall on two sides of a rounding boundary).
 */
function checkHalves(got: Float32Array, want: Float32Array, unit: number, label: string): void {
  assert.ok(got.every((v) => roundToF16(v / unit) === v / unit), `${label}: not halves`);
  assertClose(got, want, { atol: 1e-7, rtol: 1e-3, label });
  const nonzero = [...want.keys()].filter((i) => want[i] !== 0);
  const same = nonzero.filter((i) => got[i] === want[i]).length;
  assert.ok(same >= 0.95 * nonzero.length, `${label}: ${same} of ${nonzero.length} equal`);
}

gpuTest("attention GEMM rows under f16: P, dS and delta round as their references", async () => {
  // Rows of pairs 1..2 of B 2, Hkv 2, G 2, T 6 over L 8 keys, causal offset 2, left padding.
  const B = 2, Hkv = 2, G = 2, T = 6, L = 8, D = 4, scale = 0.5;
  const mask = [0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1];
  const d: RowRefDims = { c0: 1, nb: 2, T, L, Hkv, G, off: 2, scale, causal: true, keyMask: mask };
  const k = Tensor.from(randomArray(B * L * Hkv * D, 3), [B, L, Hkv, D]);
  const geo = validate(Tensor.empty([B, T, Hkv * G, D]), k, k, {
    keyMask: Tensor.from(mask, [B, L], "i32"),
    queryOffset: 2,
    scale,
    precision: "f16",
  });
  const rows = d.nb * G * T;
  const s0 = randomArray(rows * L, 4).map((v) => 3 * v);
  const scores = Tensor.from(s0, [rows, L]);
  const lse = Tensor.empty([B * Hkv * G * T]);
  maskedSoftmax(geo, d, { scores, lse, dummy: k });
  const want = maskedSoftmaxRef({ ...d, half: true }, s0);
  checkHalves(new Float32Array(await scores.toArray()), want.p, 1, "softmax P");
  const lseGot = await lse.toArray();
  assertClose(want.lseAt.map((i) => lseGot[i]), want.lse, { atol: 1e-5, rtol: 1e-6, label: "lse" });

  const x = rowGradInputs(s0, lseGot, { rows, L, outSize: B * T * Hkv * G * D });
  const t = (a: ArrayLike<number>) => Tensor.from(a, [a.length]);
  const io = { scores: t(x.scores), dp: t(x.dp), lse: t(x.lse), out: t(x.out), dout: t(x.dout) };
  softmaxGrad(geo, d, { ...io, dummy: k });
  const g = softmaxGradRef({ ...d, D, half: true }, x);
  checkHalves(new Float32Array(await io.scores.toArray()), g.p, 1, "grad P");
  const ds = new Float32Array(await io.dp.toArray());
  checkHalves(ds, g.ds, scale, "grad dS");
  // Without rounding delta's factors most dS values would be other halves.
  const plain = softmaxGradRef({ ...d, D }, x).ds;
  const unrounded = Float32Array.from(plain, (v) => roundToF16(v / scale) * scale);
  assert.ok(unrounded.some((v, i) => v !== g.ds[i]), "delta's rounding shows in dS");
});
