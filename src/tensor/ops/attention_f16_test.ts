/**
 * `attention` with precision "f16" (torch autocast's fp16 attention) against its CPU reference
 * (ref/attention_f16.ts): forward and dq, dk, dv on the GEMM path, tightly against the f16
 * reference and loosely against the f32 one. Where the GPU has no shader-f16 (the CPU adapter)
 * the operands sit rounded in f32 buffers, which gives the same numbers; the run with f16 buffers
 * is checked against that where shader-f16 exists. The references themselves are checked
 * everywhere.
 */
import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import { noGrad } from "../grad_mode.ts";
import { roundToF16 } from "../half.ts";
import { Tensor } from "../tensor.ts";
import { attentionBackwardRef, attentionRef } from "../ref/attention.ts";
import { attentionF16BackwardRef, attentionF16Ref } from "../ref/attention_f16.ts";
import { attention, attentionPolicy } from "./attention.ts";
import {
  type AttentionCase,
  attentionInputs,
  type AttentionResult,
  runAttention,
} from "./test_attention.ts";

type Case = AttentionCase;

const CASES: Case[] = [
  { dims: { B: 2, T: 9, S: 9, Hq: 4, Hkv: 2, D: 8 }, pads: [0, 3] }, // G 2, causal + padding
  { dims: { B: 3, T: 6, S: 6, Hq: 6, Hkv: 2, D: 5 }, pads: [0, 6, 2] }, // G 3, a fully padded row
  { dims: { B: 2, T: 5, S: 13, Hq: 2, Hkv: 1, D: 16 }, kvLength: 11, queryOffset: 4, pads: [1, 0] },
  { dims: { B: 1, T: 7, S: 7, Hq: 3, Hkv: 3, D: 12 }, causal: false }, // G 1, no mask
];

const inputs = attentionInputs;

type Result = AttentionResult;

function references(c: Case, x: ReturnType<typeof inputs>, round?: (v: number) => number) {
  const o = { ...x.refOpts, round };
  const f = attentionF16Ref(c.dims, x.q, x.k, x.v, o);
  return { out: f.out, lse: f.lse, ...attentionF16BackwardRef(c.dims, x.q, x.k, x.v, x.dout, o) };
}

function f32References(c: Case, x: ReturnType<typeof inputs>) {
  const f = attentionRef(c.dims, x.q, x.k, x.v, x.refOpts);
  return {
    out: f.out,
    lse: f.lse,
    ...attentionBackwardRef(c.dims, x.q, x.k, x.v, x.dout, x.refOpts),
  };
}

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) =>
  Array.from(a).reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

/** Output and gradients of attention with precision f16 under a policy. */
const run = (c: Case, seed: number, policy: Partial<typeof attentionPolicy> = {}) =>
  runAttention(c, seed, { policy, precision: "f16" });

Deno.test("attention f16 reference: the identity rounding is the f32 reference", () => {
  for (const [i, c] of CASES.entries()) {
    const x = inputs(c, 100 + i);
    const same = references(c, x, (v) => v), f32 = f32References(c, x);
    for (const key of ["out", "lse", "dq", "dk", "dv"] as const) {
      assertClose(same[key], f32[key], { atol: 1e-6, rtol: 1e-6, label: `${key} case ${i}` });
    }
  }
});

Deno.test("attention f16 reference: halves move every result, by about f16 rounding", () => {
  for (const [i, c] of CASES.entries()) {
    const x = inputs(c, 200 + i);
    const half = references(c, x), f32 = f32References(c, x);
    for (const key of ["out", "dq", "dk", "dv"] as const) {
      const d = maxDiff(half[key], f32[key]);
      assert.ok(d > 1e-5 && d < 1e-2, `${key} case ${i}: f16 vs f32 ${d}`);
    }
    const seen = (l: Float32Array) => Array.from(l, Number.isFinite);
    assert.deepEqual(seen(half.lse), seen(f32.lse));
  }
  // One visible key: P = 1 and out is v rounded to a half; its gradient is dout rounded.
  const dims = { B: 1, T: 1, S: 1, Hq: 1, Hkv: 1, D: 4 };
  const q = [0.3, -0.2, 0.1, 0.7], k = [0.5, 0.25, -1, 2];
  const v = [0.1, 1 / 3, -2.0001, 1e-6], dout = [0.7, -0.3, 1 / 7, 3];
  assert.deepEqual([...attentionF16Ref(dims, q, k, v).out], v.map(roundToF16));
  const g = attentionF16BackwardRef(dims, q, k, v, dout);
  assert.deepEqual([...g.dv], dout.map(roundToF16));
  assert.deepEqual([...g.dq], [0, 0, 0, 0]); // one key: the softmax has no gradient
});

/**
 * Tight against the f16 reference: halves (torch's SDPA returns f16), mostly the very halves of
 * the reference and over the whole tensor 10x closer to it than to the f32 reference. Where the
 * GPU's f32 value and the f64 reference's fall on two sides of a half's rounding boundary (of
 * P or dS on the way, or of the result) they differ by a half's ulp: bounded by 1e-4 + 2^-10 of
 * the value.
 */
function checkF16(got: Result, half: Result, f32: Result, label: string): void {
  const rms = (a: Float32Array, b: Float32Array) =>
    Math.sqrt(a.reduce((s, v, i) => s + (v - b[i]) ** 2, 0) / a.length);
  for (const key of ["out", "dq", "dk", "dv"] as const) {
    const g = got[key], h = half[key], what = `${key} ${label}`;
    assert.ok(g.every((v) => roundToF16(v) === v), `${what}: not halves`);
    assertClose(g, h, { atol: 1e-4, rtol: 2 ** -10, label: what });
    const nonzero = [...h.keys()].filter((i) => h[i] !== 0);
    const same = nonzero.filter((i) => g[i] === h[i]).length;
    assert.ok(same >= 0.9 * nonzero.length, `${what}: ${same} of ${nonzero.length} the same`);
    const e16 = rms(g, h), e32 = rms(g, f32[key]);
    assert.ok(e16 * 10 < e32, `${what}: rms ${e16} vs the f16 reference, ${e32} vs f32`);
  }
}

gpuTest(
  "attention precision f16 matches the f16 reference tightly, the f32 one loosely",
  async () => {
    for (const [i, c] of CASES.entries()) {
      const r = await run(c, 300 + i), x = r.x;
      const f32 = f32References(c, x);
      checkF16(r, references(c, x), f32, `case ${i}`);
      for (const key of ["out", "dq", "dk", "dv"] as const) {
        assertClose(r[key], f32[key], { atol: 3e-3, rtol: 0, label: `${key} vs f32, case ${i}` });
      }
      assert.ok(r.out.every(Number.isFinite), `finite output, case ${i}`);
    }
  },
);

gpuTest("attention precision f16: chunks, no-grad calls and the policy", async () => {
  const c = CASES[1];
  const one = await run(c, 7);
  // A budget below one pair's scratch still runs, one pair per chunk; the numbers are the same.
  const many = await run(c, 7, { budgetBytes: 64 });
  for (const key of ["out", "dq", "dk", "dv"] as const) {
    assertClose(many[key], one[key], { atol: 0, rtol: 0, label: `${key} chunked` });
  }
  // A call without gradients (the log-prob pass) computes what the training pass computes, even
  // at a shape the decode kernel would take.
  const { B, T, S, Hq, Hkv, D } = c.dims, x = one.x;
  const keyMask = Tensor.from(x.mask!, [B, S], "i32");
  const q = Tensor.from(x.q, [B, T, Hq, D]);
  const k = Tensor.from(x.k, [B, S, Hkv, D]), v = Tensor.from(x.v, [B, S, Hkv, D]);
  const plain = noGrad(() => attention(q, k, v, { keyMask, precision: "f16" }));
  assertClose(await plain.toArray(), one.out, { atol: 0, rtol: 0, label: "no-grad out" });
  const sq = Tensor.from(randomArray(16, 1), [1, 2, 2, 4]); // T * G = 4 rows: decode-sized
  const sk = Tensor.from(randomArray(8, 2), [1, 2, 1, 4]);
  const free = noGrad(() => attention(sq, sk, sk, { precision: "f16" }));
  sq.requiresGrad = true;
  const taped = attention(sq, sk, sk, { precision: "f16" });
  assertClose(await free.toArray(), await taped.toArray(), {
    atol: 0,
    rtol: 0,
    label: "decode-sized",
  });
  // The row kernels and the decode kernel have no f16 rounding: f16 refuses them.
  await assert.rejects(() => run(c, 7, { gemm: "never" }), /precision f16 runs on the GEMM path/);
  assert.throws(
    () => attention(sq, sk, sk, { precision: "f16", decodeKernel: true }),
    /precision f16 runs on the GEMM path/,
  );
  assert.throws(
    () => attention(sq, sk, sk, { precision: "bf16" as "f16" }),
    /precision "bf16": f32 or f16/,
  );
});

gpuTest(
  "attention precision f16: halves in the GEMM operands give the numbers of rounded f32 ones",
  async () => {
    for (const [i, c] of CASES.entries()) {
      const halves = await run(c, 400 + i, { f16Operands: true });
      const f32Buffers = await run(c, 400 + i, { f16Operands: false });
      checkF16(halves, references(c, halves.x), f32References(c, halves.x), `case ${i}`);
      for (const key of ["out", "dq", "dk", "dv"] as const) {
        const label = `${key} f16 vs f32 operands, case ${i}`;
        assertClose(halves[key], f32Buffers[key], { atol: 1e-6, rtol: 1e-6, label });
      }
    }
  },
  { f16: true },
);
