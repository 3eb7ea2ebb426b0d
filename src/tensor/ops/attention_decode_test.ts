import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import { noGrad } from "../autograd.ts";
import { roundToF16 } from "../half.ts";
import { Tensor } from "../tensor.ts";
import { type AttentionDims, attentionRef } from "../ref/attention.ts";
import { attention } from "./attention.ts";
import { validate } from "./attention_common.ts";
import { decodeApplies, decodePolicy } from "./attention_decode.ts";

interface Case {
  dims: AttentionDims;
  /** Left padding per batch row of the [B, S] key mask. */
  pads?: number[];
  kvLength?: number;
  queryOffset?: number;
  causal?: boolean;
  /** k and v as a KV cache of halves. */
  half?: boolean;
}

function leftPadMask(B: number, S: number, pads: number[]): Int32Array {
  const m = new Int32Array(B * S);
  for (let b = 0; b < B; b++) for (let s = pads[b]; s < S; s++) m[b * S + s] = 1;
  return m;
}

/** The decode kernel (forced) against the CPU reference. */
async function check(c: Case, seed: number): Promise<void> {
  const { B, T, S, Hq, Hkv, D } = c.dims;
  const qa = randomArray(B * T * Hq * D, seed, -2, 2);
  // A cache of halves holds k and v rounded to halves: the reference sees the same values.
  const round = (a: Float32Array) => c.half ? a.map(roundToF16) : a;
  const ka = round(randomArray(B * S * Hkv * D, seed + 1, -2, 2));
  const va = round(randomArray(B * S * Hkv * D, seed + 2));
  const kvType = c.half ? "f16" : "f32";
  const mask = c.pads ? leftPadMask(B, S, c.pads) : undefined;
  const opts = { causal: c.causal, kvLength: c.kvLength, queryOffset: c.queryOffset };
  const got = noGrad(() =>
    attention(
      Tensor.from(qa, [B, T, Hq, D]),
      Tensor.from(ka, [B, S, Hkv, D], kvType),
      Tensor.from(va, [B, S, Hkv, D], kvType),
      {
        ...opts,
        keyMask: mask ? Tensor.from(mask, [B, S], "i32") : undefined,
        decodeKernel: true,
      },
    )
  );
  const want = attentionRef(c.dims, qa, ka, va, { ...opts, keyMask: mask });
  const label = JSON.stringify(c);
  assertClose(await got.toArray(), want.out, { atol: 2e-5, rtol: 1e-4, label });
}

gpuTest(
  "attention decode kernel: T = 1 over GQA groups, head sizes and split key ranges",
  async () => {
    // The CPU adapter's splits hold 32 keys: 150 keys take 5, with a ragged last one.
    await check({ dims: { B: 2, T: 1, S: 150, Hq: 7, Hkv: 1, D: 64 }, pads: [0, 37] }, 1);
    await check({ dims: { B: 3, T: 1, S: 45, Hq: 4, Hkv: 2, D: 32 }, pads: [3, 0, 44] }, 2);
    await check({ dims: { B: 1, T: 1, S: 77, Hq: 2, Hkv: 2, D: 7 } }, 3);
    // Head sizes past one 16-vec4 column block of the score pass: two full blocks, and a part.
    await check({ dims: { B: 2, T: 1, S: 70, Hq: 6, Hkv: 2, D: 128 }, pads: [0, 11] }, 6);
    await check({ dims: { B: 1, T: 1, S: 40, Hq: 3, Hkv: 1, D: 80 } }, 7);
    // Fewer keys than one split, and a single key.
    await check({ dims: { B: 2, T: 1, S: 20, Hq: 14, Hkv: 2, D: 64 }, pads: [5, 0] }, 4);
    await check({ dims: { B: 2, T: 1, S: 1, Hq: 7, Hkv: 1, D: 64 } }, 5);
  },
);

gpuTest(
  "attention decode kernel: kv-cache views (kvLength < S), causal T > 1, no keys",
  async () => {
    const dims = { B: 2, T: 1, S: 96, Hq: 14, Hkv: 2, D: 64 };
    // decodeStep's call: a cache view without causality.
    await check({ dims, kvLength: 71, pads: [0, 9], causal: false }, 11);
    await check({ dims, kvLength: 1, causal: false }, 12);
    // A few positions at the end of the view (causal with the default offset L - T).
    await check({ dims: { ...dims, T: 2, Hq: 4, Hkv: 2 }, kvLength: 70, pads: [0, 30] }, 13);
    await check({ dims: { ...dims, T: 3, Hq: 2, Hkv: 1 }, kvLength: 33 }, 14);
    await check({ dims: { ...dims, T: 4, Hq: 8, Hkv: 2, D: 32 }, kvLength: 65, pads: [2, 64] }, 15);
    // An explicit offset that hides whole splits, and rows that see nothing (left padding).
    await check({ dims: { ...dims, T: 2, Hq: 2, Hkv: 2 }, kvLength: 90, queryOffset: 40 }, 16);
    await check({ dims: { ...dims, T: 2, Hq: 2, Hkv: 2 }, kvLength: 50, pads: [50, 0] }, 17);
    await check({ dims: { ...dims, Hq: 2 }, kvLength: 0 }, 18);
  },
);

gpuTest("attention decode kernel: long splits, in the GPU's wider workgroups", async () => {
  // Few workgroups wanted: splits keep up to 256 keys, so on a GPU each of the four key groups
  // of a 512-invocation workgroup's P @ V pass walks 64 of them (a CPU adapter runs its own
  // small workgroups over the same cases).
  const saved = { ...decodePolicy };
  decodePolicy.targetWorkgroups = 1;
  try {
    const dims = { B: 2, T: 1, S: 300, Hq: 7, Hkv: 1, D: 64 };
    await check({ dims, pads: [0, 61] }, 51);
    await check({ dims, kvLength: 203, causal: false, half: true }, 52);
    await check({ dims: { ...dims, Hq: 14, Hkv: 2 }, kvLength: 131, half: true }, 53);
  } finally {
    Object.assign(decodePolicy, saved);
  }
});

gpuTest("attention decode kernel over f16 k and v (a KV cache of halves)", async () => {
  const dims = { B: 2, T: 1, S: 150, Hq: 7, Hkv: 1, D: 64 };
  await check({ dims, pads: [0, 37], half: true }, 41);
  await check({ dims: { ...dims, Hq: 14, Hkv: 2 }, kvLength: 71, causal: false, half: true }, 42);
  await check({ dims: { ...dims, Hq: 6, Hkv: 2, D: 128 }, kvLength: 90, half: true }, 44);
  await check({ dims: { ...dims, T: 2, Hq: 4, Hkv: 2, D: 32 }, kvLength: 40, half: true }, 43);
  const q = Tensor.empty([1, 1, 2, 8]);
  const kv = (D: number) => Tensor.empty([1, 3, 1, D], "f16");
  assert.throws(() => attention(q, kv(8), kv(8), { decodeKernel: false }), /decode kernel only/);
  assert.throws(
    () => attention(Tensor.empty([1, 1, 2, 6]), kv(6), kv(6)),
    /multiple of 4.*k \[1, 3, 1, 6\] f16/,
  );
  assert.throws(() => attention(q, kv(8), Tensor.empty([1, 3, 1, 8])), /both f32 or both f16/);
  q.requiresGrad = true;
  assert.throws(() => attention(q, kv(8), kv(8)), /f16 k and v needs a call without gradients/);
});

gpuTest("attention picks the decode kernel only for few rows without gradients", () => {
  const g = (T: number, Hq: number, D = 64) => {
    const kv = Tensor.empty([2, 40, 2, D]);
    return validate(Tensor.empty([2, T, Hq, D]), kv, kv, { kvLength: 30 });
  };
  assert.equal(decodeApplies(g(1, 14), true, undefined), true);
  assert.equal(decodeApplies(g(2, 14), true, undefined), true);
  assert.equal(decodeApplies(g(3, 14), true, undefined), false); // 21 rows per kv head
  assert.equal(decodeApplies(g(1, 14), false, undefined), false); // gradients needed
  assert.equal(decodeApplies(g(1, 14), true, false), false);
  assert.equal(decodeApplies(g(3, 14, 8), true, true), true); // 21 rows x 2 column groups
  assert.throws(
    () => decodeApplies(g(1, 14), false, true),
    /decodeKernel true needs a call without/,
  );
  assert.throws(() => decodeApplies(g(3, 14), true, true), /21 rows of head size 64 do not fit/);
});
