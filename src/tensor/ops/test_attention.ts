/**
 * The fixture the attention op's tests share (attention_test.ts, attention_gemm_test.ts,
 * attention_f16_test.ts): cases, their random inputs and key masks, one run of the op with its
 * gradients, and the GEMM path's row-kernel inputs (attention_gemm_test.ts, _f16_test.ts).
 */
import { randomArray } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import type { AttentionDims } from "../ref/attention.ts";
import { Tensor } from "../tensor.ts";
import { attention, type AttentionOptions, attentionPolicy } from "./attention.ts";

export interface AttentionCase {
  dims: AttentionDims;
  causal?: boolean;
  /** Left padding: row b has pads[b] masked keys at the start. */
  pads?: number[];
  kvLength?: number;
  queryOffset?: number;
  scale?: number;
  /** Whether the run also checks gradients (attention_test.ts). */
  grad?: boolean;
}

/** Left padding: row b has pads[b] masked keys at the start of a [B, S] mask. */
export function leftPadMask(B: number, S: number, pads: number[]): Int32Array {
  const m = new Int32Array(B * S);
  for (let b = 0; b < B; b++) for (let s = pads[b]; s < S; s++) m[b * S + s] = 1;
  return m;
}

/**
 * Random q, k, v and dout of a case (seeds seed .. seed + 3), its key mask, and the options the
 * op (`opts`, without the mask tensor) and the CPU references (`refOpts`) take.
 */
export function attentionInputs(c: AttentionCase, seed: number) {
  const { B, T, S, Hq, Hkv, D } = c.dims;
  const mask = c.pads ? leftPadMask(B, S, c.pads) : undefined;
  const opts = {
    causal: c.causal,
    kvLength: c.kvLength,
    queryOffset: c.queryOffset,
    scale: c.scale,
  };
  return {
    q: randomArray(B * T * Hq * D, seed),
    k: randomArray(B * S * Hkv * D, seed + 1),
    v: randomArray(B * S * Hkv * D, seed + 2),
    dout: randomArray(B * T * Hq * D, seed + 3),
    mask,
    opts,
    refOpts: { ...opts, keyMask: mask },
  };
}

export type AttentionInputs = ReturnType<typeof attentionInputs>;
export type AttentionResult = Record<"out" | "dq" | "dk" | "dv", Float32Array>;

/**
 * Output and gradients of `attention` on a case's inputs under a policy (the rest of it as it
 * is, restored after), with those inputs.
 */
export async function runAttention(
  c: AttentionCase,
  seed: number,
  o: { policy?: Partial<typeof attentionPolicy>; precision?: AttentionOptions["precision"] } = {},
): Promise<AttentionResult & { x: AttentionInputs }> {
  const { B, T, S, Hq, Hkv, D } = c.dims;
  const x = attentionInputs(c, seed);
  const q = Tensor.from(x.q, [B, T, Hq, D]);
  const k = Tensor.from(x.k, [B, S, Hkv, D]);
  const v = Tensor.from(x.v, [B, S, Hkv, D]);
  for (const t of [q, k, v]) t.requiresGrad = true;
  const saved = { ...attentionPolicy };
  Object.assign(attentionPolicy, o.policy ?? {});
  try {
    const out = attention(q, k, v, {
      ...x.opts,
      keyMask: x.mask ? Tensor.from(x.mask, [B, S], "i32") : undefined,
      precision: o.precision,
    });
    backward(out, Tensor.from(x.dout, out.shape));
    const [res, dq, dk, dv] = await Promise.all(
      [out, q.grad!, k.grad!, v.grad!].map(async (t) => new Float32Array(await t.toArray())),
    );
    return { out: res, dq, dk, dv, x };
  } finally {
    Object.assign(attentionPolicy, saved);
  }
}

/**
 * What the backward row kernel (softmaxGrad) reads besides the forward's scores and lse: random
 * dP [rows, L], and out and dout of `outSize` elements ([B, T, Hq, D]).
 */
export function rowGradInputs(
  scores: ArrayLike<number>,
  lse: ArrayLike<number>,
  o: { rows: number; L: number; outSize: number },
) {
  return {
    scores,
    dp: randomArray(o.rows * o.L, 5),
    lse,
    out: randomArray(o.outSize, 6),
    dout: randomArray(o.outSize, 7),
  };
}
