import assert from "node:assert/strict";
import { assertClose, finiteDiff, gpuTest, randomArray } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { Tensor } from "../tensor.ts";
import { attentionBackwardRef, attentionRef, type AttentionRefOptions } from "../ref/attention.ts";
import { attention, attentionPolicy } from "./attention.ts";
import { type AttentionCase, leftPadMask } from "./test_attention.ts";

type Case = AttentionCase;

/** Runs a case on the flash-style row kernels and on the default choice (the GEMM path). */
async function check(c: Case, seed: number): Promise<Float32Array> {
  const saved = attentionPolicy.gemm;
  try {
    attentionPolicy.gemm = "never";
    await checkOnce(c, seed);
  } finally {
    attentionPolicy.gemm = saved;
  }
  return await checkOnce(c, seed);
}

async function checkOnce(c: Case, seed: number): Promise<Float32Array> {
  const { B, T, S, Hq, Hkv, D } = c.dims;
  const qa = randomArray(B * T * Hq * D, seed);
  const ka = randomArray(B * S * Hkv * D, seed + 1);
  const va = randomArray(B * S * Hkv * D, seed + 2);
  const mask = c.pads ? leftPadMask(B, S, c.pads) : undefined;
  const ref: AttentionRefOptions = {
    causal: c.causal,
    kvLength: c.kvLength,
    queryOffset: c.queryOffset,
    scale: c.scale,
    keyMask: mask,
  };
  const q = Tensor.from(qa, [B, T, Hq, D]);
  const k = Tensor.from(ka, [B, S, Hkv, D]);
  const v = Tensor.from(va, [B, S, Hkv, D]);
  for (const t of [q, k, v]) t.requiresGrad = c.grad ?? false;
  const out = attention(q, k, v, {
    causal: c.causal,
    kvLength: c.kvLength,
    queryOffset: c.queryOffset,
    scale: c.scale,
    keyMask: mask ? Tensor.from(mask, [B, S], "i32") : undefined,
  });
  const want = attentionRef(c.dims, qa, ka, va, ref);
  const got = await out.toArray() as Float32Array;
  const label = `${JSON.stringify(c)} ${attentionPolicy.gemm}`;
  assertClose(got, want.out, { atol: 2e-5, rtol: 1e-4, label: `out ${label}` });
  if (!c.grad) return got;
  const da = randomArray(B * T * Hq * D, seed + 3);
  backward(out, Tensor.from(da, out.shape));
  const g = attentionBackwardRef(c.dims, qa, ka, va, da, ref);
  const [dq, dk, dv] = await Promise.all([q, k, v].map((t) => t.grad!.toArray()));
  assertClose(dq, g.dq, { atol: 5e-5, rtol: 1e-3, label: `dq ${label}` });
  assertClose(dk, g.dk, { atol: 5e-5, rtol: 1e-3, label: `dk ${label}` });
  assertClose(dv, g.dv, { atol: 5e-5, rtol: 1e-3, label: `dv ${label}` });
  return got;
}

gpuTest(
  "attention forward and backward match the reference (GQA, causal or not, odd sizes)",
  async () => {
    const cases: Case[] = [
      { dims: { B: 2, T: 5, S: 5, Hq: 6, Hkv: 2, D: 7 }, grad: true },
      { dims: { B: 1, T: 19, S: 19, Hq: 3, Hkv: 1, D: 9 }, grad: true },
      { dims: { B: 2, T: 7, S: 21, Hq: 4, Hkv: 4, D: 5 }, causal: false, grad: true },
      { dims: { B: 1, T: 6, S: 17, Hq: 2, Hkv: 1, D: 13 }, scale: 0.3, grad: true },
      { dims: { B: 1, T: 9, S: 9, Hq: 2, Hkv: 1, D: 64 }, grad: true },
    ];
    for (const [i, c] of cases.entries()) await check(c, 10 * i + 1);
  },
);

gpuTest("attention: fully padded query rows give zeros and zero gradients, never NaN", async () => {
  const dims = { B: 3, T: 11, S: 11, Hq: 4, Hkv: 2, D: 6 };
  const pads = [0, 4, 11];
  const got = await check({ dims, pads, grad: true }, 7);
  const rowSize = dims.Hq * dims.D;
  for (let b = 0; b < dims.B; b++) {
    for (let t = 0; t < pads[b]; t++) {
      const row = got.subarray((b * dims.T + t) * rowSize, (b * dims.T + t + 1) * rowSize);
      assert.ok(row.every((x) => x === 0), `row (${b}, ${t}) of a padding query is not zero`);
    }
  }
  await check({ dims: { ...dims, T: 4 }, pads, causal: false, grad: true }, 8);
});

gpuTest("attention decode (T = 1) over long, padded and split key ranges", async () => {
  await check({ dims: { B: 2, T: 1, S: 150, Hq: 7, Hkv: 1, D: 16 }, pads: [0, 37] }, 21);
  await check({ dims: { B: 1, T: 1, S: 300, Hq: 2, Hkv: 2, D: 8 }, grad: true }, 22);
  await check({ dims: { B: 3, T: 2, S: 70, Hq: 4, Hkv: 2, D: 4 }, pads: [0, 69, 70] }, 23);
});

gpuTest("attention over a kv-cache view (kvLength < S) and explicit queryOffset", async () => {
  const dims = { B: 2, T: 3, S: 20, Hq: 4, Hkv: 2, D: 10 };
  await check({ dims, kvLength: 13, grad: true }, 31);
  await check({ dims, kvLength: 13, pads: [2, 5], grad: true }, 32);
  await check({ dims: { ...dims, T: 1 }, kvLength: 1 }, 33);
  await check({ dims, kvLength: 9, queryOffset: 2, grad: true }, 34);
  await check({ dims: { ...dims, T: 5 }, kvLength: 3, grad: true }, 35);
});

gpuTest("attention rejects bad inputs, naming shapes and dtypes", () => {
  const q = Tensor.empty([1, 2, 4, 8]);
  const k = Tensor.empty([1, 3, 2, 8]);
  assert.throws(
    () => attention(q, k, Tensor.empty([1, 3, 2, 7])),
    /attention: k and v shapes differ.*v \[1, 3, 2, 7\] f32/,
  );
  assert.throws(
    () => attention(q, Tensor.empty([1, 3, 3, 8]), Tensor.empty([1, 3, 3, 8])),
    /Hq must be a multiple of Hkv.*k \[1, 3, 3, 8\]/,
  );
  assert.throws(
    () => attention(Tensor.empty([1, 2, 4, 8], "i32"), k, k),
    /must be f32.*q \[1, 2, 4, 8\] i32/,
  );
  assert.throws(
    () => attention(q, k, k, { keyMask: Tensor.empty([1, 3]) }),
    /keyMask must be i32.*keyMask \[1, 3\] f32/,
  );
  assert.throws(
    () => attention(q, k, k, { kvLength: 4 }),
    /kvLength 4 must be an integer in \[0, 3\]/,
  );
  assert.throws(
    () => attention(Tensor.empty([2, 8]), k, k),
    /expected q \[B, T, Hq, D\].*q \[2, 8\]/,
  );
  const big = Tensor.empty([1, 1, 1, 130]);
  assert.throws(() => attention(big, big, big), /head size must be in \[1, 128\]/);
});

Deno.test("attention reference backward matches finite differences", () => {
  const dims = { B: 1, T: 3, S: 4, Hq: 2, Hkv: 1, D: 3 };
  const opts: AttentionRefOptions = { keyMask: [0, 1, 1, 1], queryOffset: 1 };
  const q = randomArray(18, 1), k = randomArray(12, 2), v = randomArray(12, 3);
  const dout = randomArray(18, 4);
  const loss = (qq: ArrayLike<number>, kk: ArrayLike<number>, vv: ArrayLike<number>) => {
    const { out } = attentionRef(dims, qq, kk, vv, opts);
    return out.reduce((a, x, i) => a + x * dout[i], 0);
  };
  const g = attentionBackwardRef(dims, q, k, v, dout, opts);
  const tol = { atol: 2e-3, rtol: 1e-2 };
  assertClose(g.dq, finiteDiff((x) => loss(x, k, v), q), { ...tol, label: "dq" });
  assertClose(g.dk, finiteDiff((x) => loss(q, x, v), k), { ...tol, label: "dk" });
  assertClose(g.dv, finiteDiff((x) => loss(q, k, x), v), { ...tol, label: "dv" });
  // Query 0 sits at position 1 and sees only key 1; key 0 is padding and gets no gradient.
  assert.ok(g.dk.subarray(0, 3).every((x) => x === 0));
});
