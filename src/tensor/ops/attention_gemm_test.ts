import assert from "node:assert/strict";
import { assertClose, finiteDiff, gpuTest, randomArray } from "../../testing/mod.ts";
import { Tensor } from "../tensor.ts";
import { attentionBackwardRef, attentionRef } from "../ref/attention.ts";
import {
  maskedSoftmaxRef,
  packHeadsRef,
  type RowRefDims,
  softmaxGradRef,
  unpackHeadsRef,
} from "../ref/attention_gemm.ts";
import { attentionPolicy } from "./attention.ts";
import {
  type AttentionCase,
  attentionInputs,
  rowGradInputs,
  runAttention,
} from "./test_attention.ts";
import { validate } from "./attention_common.ts";
import { gemmForward } from "./attention_gemm.ts";
import { maskedSoftmax, packHeads, softmaxGrad, unpackHeads } from "./attention_gemm_kernels.ts";

type Case = AttentionCase;

/** `attention` under a policy (the rest of it as by default). */
const run = (c: Case, seed: number, policy: Partial<typeof attentionPolicy>) =>
  runAttention(c, seed, { policy });

const CASES: Case[] = [
  { dims: { B: 2, T: 13, S: 13, Hq: 2, Hkv: 2, D: 5 }, pads: [0, 4] }, // G 1, odd D
  { dims: { B: 1, T: 19, S: 19, Hq: 4, Hkv: 2, D: 64 } }, // G 2, D 64
  { dims: { B: 3, T: 9, S: 9, Hq: 7, Hkv: 1, D: 7 }, pads: [0, 3, 9] }, // G 7, a fully padded row
  { dims: { B: 2, T: 5, S: 17, Hq: 4, Hkv: 2, D: 6 }, kvLength: 12, queryOffset: 3, pads: [2, 0] },
  { dims: { B: 2, T: 7, S: 11, Hq: 6, Hkv: 2, D: 9 }, causal: false, pads: [0, 5] },
  // Long enough that causal products skip blocks and K ranges (a CPU adapter's 64-wide tiles),
  // heads wrapping inside a block, with and without a key offset.
  { dims: { B: 1, T: 150, S: 150, Hq: 2, Hkv: 1, D: 8 } },
  { dims: { B: 1, T: 140, S: 180, Hq: 2, Hkv: 1, D: 8 }, queryOffset: 40, pads: [2] },
];

gpuTest("attention GEMM path matches the reference and the flash kernels", async () => {
  for (const [i, c] of CASES.entries()) {
    const label = JSON.stringify(c);
    const gemm = await run(c, 10 * i + 1, { gemm: "always" });
    const flash = await run(c, 10 * i + 1, { gemm: "never" });
    const perKv = await run(c, 10 * i + 1, { gemm: "always", keySidePerHead: false });
    const { q, k, v, dout, mask } = gemm.x;
    const opts = {
      causal: c.causal,
      kvLength: c.kvLength,
      queryOffset: c.queryOffset,
      keyMask: mask,
    };
    const want = attentionRef(c.dims, q, k, v, opts);
    const g = attentionBackwardRef(c.dims, q, k, v, dout, opts);
    const tol = { atol: 5e-5, rtol: 1e-3 };
    assertClose(gemm.out, want.out, { atol: 2e-5, rtol: 1e-4, label: `out ${label}` });
    assertClose(gemm.dq, g.dq, { ...tol, label: `dq ${label}` });
    assertClose(gemm.dk, g.dk, { ...tol, label: `dk ${label}` });
    assertClose(gemm.dv, g.dv, { ...tol, label: `dv ${label}` });
    for (const key of ["out", "dq", "dk", "dv"] as const) {
      assertClose(perKv[key], gemm[key], {
        atol: 1e-6,
        rtol: 1e-5,
        label: `${key} per kv ${label}`,
      });
      assertClose(gemm[key], flash[key], {
        atol: 2e-5,
        rtol: 1e-4,
        label: `${key} vs flash ${label}`,
      });
    }
    if (c.pads) {
      // Query rows of a fully padded batch row see nothing: zeros, no NaN.
      assert.ok(gemm.out.every((x) => Number.isFinite(x)), `finite output ${label}`);
    }
  }
});

gpuTest(
  "attention GEMM path: its lse matches the reference; chunks of one pair equal one chunk",
  async () => {
    const c: Case = { dims: { B: 3, T: 6, S: 8, Hq: 4, Hkv: 2, D: 5 }, pads: [0, 8, 2] };
    const { B, T, S, Hq, Hkv, D } = c.dims;
    const x = attentionInputs(c, 5);
    const q = Tensor.from(x.q, [B, T, Hq, D]);
    const k = Tensor.from(x.k, [B, S, Hkv, D]), v = Tensor.from(x.v, [B, S, Hkv, D]);
    const keyMask = Tensor.from(x.mask!, [B, S], "i32");
    const g = validate(q, k, v, { keyMask });
    const want = attentionRef(c.dims, x.q, x.k, x.v, { keyMask: x.mask });
    for (const chunk of [1, 2, 6]) {
      const out = Tensor.empty(q.shape), lse = Tensor.empty([2, B, Hq, T]);
      gemmForward(g, { q, k, v }, { out, lse }, { chunk, operands: "f32" });
      assertClose(await out.toArray(), want.out, {
        atol: 2e-5,
        rtol: 1e-4,
        label: `out chunk ${chunk}`,
      });
      const got = (await lse.toArray()).subarray(0, B * Hq * T);
      const wantLse = want.lse.map((l) => l === -Infinity ? -1e30 : l);
      assertClose(got, wantLse, { atol: 2e-5, rtol: 1e-5, label: `lse chunk ${chunk}` });
    }
    // Through the op: a budget of one pair's scores (several chunks) gives what one chunk gives.
    const big: Case = { dims: { B: 2, T: 10, S: 10, Hq: 6, Hkv: 3, D: 4 }, pads: [3, 0] };
    const onePair = 2 * 10 * 10 * 4;
    const one = await run(big, 3, { gemm: "always" });
    const many = await run(big, 3, { gemm: "always", budgetBytes: onePair });
    for (const key of ["out", "dq", "dk", "dv"] as const) {
      assertClose(many[key], one[key], { atol: 1e-6, rtol: 1e-6, label: `${key} chunked` });
    }
    // Too small a budget for one pair: "always" says so, "auto" falls back to the flash kernels.
    const tooSmall = onePair - 4;
    await assert.rejects(
      () => run(big, 3, { gemm: "always", budgetBytes: tooSmall }),
      /GEMM path does not apply/,
    );
    const auto = await run(big, 3, { gemm: "auto", budgetBytes: tooSmall });
    assertClose(auto.out, one.out, { atol: 2e-5, rtol: 1e-4, label: "auto fallback" });
  },
);

gpuTest("attention GEMM path gradients match finite differences of the reference", async () => {
  const c: Case = { dims: { B: 1, T: 4, S: 5, Hq: 2, Hkv: 1, D: 3 }, pads: [1], queryOffset: 1 };
  const r = await run(c, 42, { gemm: "always" });
  const { q, k, v, dout, mask } = r.x;
  const opts = { keyMask: mask, queryOffset: 1 };
  const loss = (qq: ArrayLike<number>, kk: ArrayLike<number>, vv: ArrayLike<number>) =>
    attentionRef(c.dims, qq, kk, vv, opts).out.reduce((a, o, i) => a + o * dout[i], 0);
  const tol = { atol: 2e-3, rtol: 1e-2 };
  assertClose(r.dq, finiteDiff((x) => loss(x, k, v), q), { ...tol, label: "dq" });
  assertClose(r.dk, finiteDiff((x) => loss(q, x, v), k), { ...tol, label: "dk" });
  assertClose(r.dv, finiteDiff((x) => loss(q, k, x), v), { ...tol, label: "dv" });
});

gpuTest(
  "attention GEMM kernels: packing, masked softmax and its gradient match their references",
  async () => {
    // Pack pairs 1..2 of a [B 2, R 7, Hkv 2 * G 3, D 5] operand, 6 positions; unpack zero-fills.
    const p = { c0: 1, nb: 2, Hkv: 2, G: 3, n: 6, R: 7, D: 5 };
    const src = randomArray(2 * 7 * 6 * 5, 1);
    const packed = Tensor.empty([p.nb, p.G * p.n, p.D]);
    packHeads(Tensor.from(src, [2, 7, 6, 5]), packed, p);
    assertClose(await packed.toArray(), packHeadsRef(src, p), { atol: 0, rtol: 0, label: "pack" });
    const base = randomArray(src.length, 2), dst = Tensor.from(base, [2, 7, 6, 5]);
    unpackHeads(packed, dst, p);
    const back = unpackHeadsRef(packHeadsRef(src, p), base, p);
    assertClose(await dst.toArray(), back, { atol: 0, rtol: 0, label: "unpack" });
    // Two partial results per element, summed while unpacking.
    const partial = randomArray(2 * packed.size, 8);
    unpackHeads(Tensor.from(partial, [p.nb, 2, p.G * p.n, p.D]), dst, { ...p, parts: 2 });
    const summed = unpackHeadsRef(partial, back, { ...p, parts: 2 });
    assertClose(await dst.toArray(), summed, { atol: 1e-6, rtol: 1e-6, label: "unpack parts" });

    // Rows of pairs 1..2 of B 2, Hkv 2, G 2, T 3 over L 5 keys, causal offset 1, left padding.
    const mask = [0, 0, 0, 1, 1, 1, 1, 1, 1, 1]; // batch row 0 sees keys >= 3 only
    const d = { c0: 1, nb: 2, T: 3, L: 5, Hkv: 2, G: 2, off: 1, scale: 0.7, causal: true };
    const want = await rowKernelsMatch({ ...d, keyMask: mask }, { B: 2, D: 4 });
    assert.ok(want.lse.some((l) => l === -1e30), "the case has a row that sees no key");
    // 700 keys: 64 invocations a row, two rows a workgroup, 15 rows (the last workgroup's second
    // row is past the end).
    const long = { c0: 0, nb: 1, T: 5, L: 700, Hkv: 1, G: 3, off: 695, scale: 0.3, causal: true };
    await rowKernelsMatch(long, { B: 1, D: 8 });
  },
);

/** The masked softmax and its gradient on random rows against their references. */
async function rowKernelsMatch(d: RowRefDims, o: { B: number; D: number }) {
  const { B, D } = o, { T, L, Hkv, G } = d;
  const k = Tensor.from(randomArray(B * L * Hkv * D, 3), [B, L, Hkv, D]);
  const geo = validate(Tensor.empty([B, T, Hkv * G, D]), k, k, {
    keyMask: d.keyMask ? Tensor.from(d.keyMask, [B, L], "i32") : undefined,
    queryOffset: d.off,
    scale: d.scale,
  });
  const rows = d.nb * G * T;
  const s0 = randomArray(rows * L, 4);
  const scores = Tensor.from(s0, [rows, L]);
  const lse = Tensor.from(new Float32Array(B * Hkv * G * T).fill(7), [B * Hkv * G * T]);
  maskedSoftmax(geo, d, { scores, lse, dummy: k });
  const want = maskedSoftmaxRef(d, s0);
  const label = `L ${L}`;
  assertClose(await scores.toArray(), want.p, {
    atol: 1e-6,
    rtol: 1e-5,
    label: `softmax ${label}`,
  });
  const lseGot = await lse.toArray();
  assertClose(want.lseAt.map((i) => lseGot[i]), want.lse, {
    atol: 1e-5,
    rtol: 1e-6,
    label: `lse ${label}`,
  });
  const inChunk = new Set(want.lseAt);
  assert.ok(lseGot.every((x, i) => inChunk.has(i) || x === 7), `pairs outside the chunk ${label}`);

  const x = rowGradInputs(s0, lseGot, { rows, L, outSize: B * T * Hkv * G * D });
  const t = (a: ArrayLike<number>, shape: number[]) => Tensor.from(a, shape);
  const io = {
    scores: t(x.scores, [rows, L]),
    dp: t(x.dp, [rows, L]),
    lse: t(x.lse, [x.lse.length]),
    out: t(x.out, [x.out.length]),
    dout: t(x.dout, [x.dout.length]),
    dummy: k,
  };
  softmaxGrad(geo, d, io);
  const g = softmaxGradRef({ ...d, D }, x);
  assertClose(await io.scores.toArray(), g.p, { atol: 1e-6, rtol: 1e-5, label: `grad P ${label}` });
  assertClose(await io.dp.toArray(), g.ds, { atol: 1e-6, rtol: 1e-5, label: `grad dS ${label}` });
  return want;
}
