/**
 * Attention through batched GEMMs (the training and prefill path of `attention`, chosen in
 * attention.ts). The G query heads sharing a kv head form one matrix Qg [G * T, D] per (batch,
 * kv head) pair; over chunks of pairs:
 *   forward:  S = Qg K^T, P = masked softmax(scale * S) in place (lse saved), O = P V;
 *   backward: S = Qg K^T, dP = dOg V^T, then P and dS = scale * P * (dP - delta) in place
 *             (delta = dO . O), dV = P^T dOg, dK = dS^T Qg, dQ = dS K.
 * P is never kept between forward and backward; the [nb, G * T, L] score buffers live only inside
 * one call. Under a causal mask the products skip what meets only masked scores: score blocks
 * beyond their rows' reach stay unwritten (the row kernels read visible entries only), and K
 * ranges end (or start) where P and dS are 0. Operands are packed into and out of the GEMM layout
 * by attention_gemm_pack.
 *
 * Under f16 precision (g.half) the numbers are those of torch's fp16 attention: Qg, K, V and dOg
 * are packed rounded to halves (`operands` "f16" stores them so; "f32" keeps f32 buffers holding
 * the same values), the row kernels round P and dS in place, every GEMM accumulates in f32, and
 * out, dq, dk and dv are unpacked rounded to halves (f32 tensors, as the model expects). A
 * product of two halves is exact in f32, so the stored type changes memory and bandwidth only:
 * P and dS stay in the f32 score buffers, and no second score-sized buffer is needed.
 */
import { Tensor } from "../tensor.ts";
import type { Geometry } from "./attention_common.ts";
import {
  type HeadPacking,
  maskedSoftmax,
  packHeads,
  softmaxGrad,
  unpackHeads,
} from "./attention_gemm_kernels.ts";
import { type CausalBlocks, type Gemm, gemm } from "./matmul_kernel.ts";

/** Bytes of the largest per-pair scratch matrix: scores, Qg or the per-head dK partials. */
export function bytesPerPair(g: Geometry): number {
  return g.G * Math.max(g.T * g.L, g.T * g.D, g.L * g.D) * 4;
}

/** Pairs per chunk whose scratch fits `capBytes`, at most B * Hkv (0: not even one fits). */
export function pairsPerChunk(g: Geometry, capBytes: number): number {
  return Math.min(g.B * g.Hkv, Math.floor(capBytes / bytesPerPair(g)));
}

interface Plan {
  rows: number; // G * T
  chunk: number; // pairs per chunk
  total: number; // B * Hkv
  qPack: (c0: number, nb: number) => HeadPacking;
  kvPack: (c0: number, nb: number) => HeadPacking;
}

function planOf(g: Geometry, chunk: number): Plan {
  const { Hkv, G, T, S, L, D } = g;
  return {
    rows: G * T,
    chunk,
    total: g.B * Hkv,
    qPack: (c0, nb) => ({ c0, nb, Hkv, G, n: T, R: T, D }),
    kvPack: (c0, nb) => ({ c0, nb, Hkv, G: 1, n: L, R: S, D }),
  };
}

/**
 * Products over nb pairs: [rows, D] x [L, D]^T, [rows, L] x [L, D], and the key side [rows, L]^T x
 * [rows, D], the latter over `parts` equal slices of the rows (partial sums, [nb, parts, L, D]).
 */
function products(g: Geometry, rows: number, nb: number, parts: number) {
  const { L, D } = g;
  const base = { batch: nb, transA: false, transB: false };
  const kr = rows / parts;
  // Causal: the blocks and K ranges that meet only masked scores are skipped (matmul_kernel.ts's
  // CausalBlocks); the key side only where K is one head's T rows (per-head partials).
  const causal = (kind: CausalBlocks["kind"]) =>
    g.causal && (kind !== "keySide" || kr === g.T) ? { kind, period: g.T, off: g.off } : null;
  const scores: Gemm = {
    ...base,
    m: rows,
    n: L,
    k: D,
    transB: true,
    strideA: rows * D,
    strideB: L * D,
    causal: causal("scores"),
  };
  const byKeys: Gemm = {
    ...base,
    m: rows,
    n: D,
    k: L,
    strideA: rows * L,
    strideB: L * D,
    causal: causal("byKeys"),
  };
  const keySide: Gemm = {
    ...base,
    batch: nb * parts,
    m: L,
    n: D,
    k: kr,
    transA: true,
    strideA: kr * L,
    strideB: kr * D,
    causal: causal("keySide"),
  };
  return { scores, byKeys, keySide };
}

function chunks(p: Plan): { c0: number; nb: number }[] {
  const out = [];
  for (let c0 = 0; c0 < p.total; c0 += p.chunk) {
    out.push({ c0, nb: Math.min(p.chunk, p.total - c0) });
  }
  return out;
}

/** How a call runs: `chunk` pairs at a time; the packed operands' dtype (f16: g.half only). */
export interface GemmRun {
  chunk: number;
  operands: "f32" | "f16";
}

function operandType(g: Geometry, run: GemmRun): "f32" | "f16" {
  if (run.operands === "f16" && !g.half) {
    throw new Error("attention: f16 GEMM operands need precision f16");
  }
  return run.operands;
}

/**
 * out [B, T, Hq, D] and lse (the first B * Hq * T floats of `lse`) of q [B, T, Hq, D] and k, v
 * [B, S, Hkv, D].
 */
export function gemmForward(
  g: Geometry,
  x: { q: Tensor; k: Tensor; v: Tensor },
  res: { out: Tensor; lse: Tensor },
  run: GemmRun,
): void {
  const chunk = run.chunk, dt = operandType(g, run), round = g.half;
  const p = planOf(g, chunk);
  const qg = Tensor.empty([chunk, p.rows, g.D], dt, "attention.qg");
  const kg = Tensor.empty([chunk, g.L, g.D], dt, "attention.kg");
  const vg = Tensor.empty([chunk, g.L, g.D], dt, "attention.vg");
  const sc = Tensor.empty([chunk, p.rows, g.L], "f32", "attention.scores");
  const og = Tensor.empty([chunk, p.rows, g.D], "f32", "attention.og");
  for (const c of chunks(p)) {
    const qp = p.qPack(c.c0, c.nb), kp = p.kvPack(c.c0, c.nb);
    const d = products(g, p.rows, c.nb, 1);
    packHeads(x.q, qg, qp, round);
    packHeads(x.k, kg, kp, round);
    packHeads(x.v, vg, kp, round);
    gemm(qg, kg, sc, d.scores);
    maskedSoftmax(g, c, { scores: sc, lse: res.lse, dummy: x.k });
    gemm(sc, vg, og, d.byKeys);
    unpackHeads(og, res.out, qp, round);
  }
  for (const t of [qg, kg, vg, sc, og]) t.dispose();
}

/**
 * dq, dk, dv of sum(out * dout), recomputing P from the saved lse. With `perHead`, dK and dV are
 * G products of T rows per pair (more, shorter GEMMs) summed while unpacking, rather than one
 * product over the pair's G * T rows.
 */
export function gemmBackward(
  g: Geometry,
  saved: { q: Tensor; k: Tensor; v: Tensor; out: Tensor; lse: Tensor },
  dout: Tensor,
  options: GemmRun & { perHead: boolean },
): [Tensor, Tensor, Tensor] {
  const { q, k, v } = saved;
  const chunk = options.chunk, parts = options.perHead ? g.G : 1;
  const dt = operandType(g, options), round = g.half;
  const p = planOf(g, chunk);
  const dq = Tensor.empty(q.shape, "f32", "attention.dq");
  const dk = Tensor.empty(k.shape, "f32", "attention.dk");
  const dv = Tensor.empty(v.shape, "f32", "attention.dv");
  const rowsD = [chunk, p.rows, g.D], keysD = [chunk, g.L, g.D], scoreShape = [chunk, p.rows, g.L];
  const partsD = [chunk, parts, g.L, g.D];
  const qg = Tensor.empty(rowsD, dt, "attention.qg");
  const dog = Tensor.empty(rowsD, dt, "attention.dog");
  const dqg = Tensor.empty(rowsD, "f32", "attention.dqg");
  const kg = Tensor.empty(keysD, dt, "attention.kg");
  const vg = Tensor.empty(keysD, dt, "attention.vg");
  const dkg = Tensor.empty(partsD, "f32", "attention.dkg");
  const dvg = Tensor.empty(partsD, "f32", "attention.dvg");
  const sc = Tensor.empty(scoreShape, "f32", "attention.scores");
  const dp = Tensor.empty(scoreShape, "f32", "attention.dp");
  for (const c of chunks(p)) {
    const qp = p.qPack(c.c0, c.nb), kp = p.kvPack(c.c0, c.nb);
    const d = products(g, p.rows, c.nb, parts);
    packHeads(q, qg, qp, round);
    packHeads(dout, dog, qp, round);
    packHeads(k, kg, kp, round);
    packHeads(v, vg, kp, round);
    gemm(qg, kg, sc, d.scores);
    gemm(dog, vg, dp, d.scores);
    softmaxGrad(g, c, { scores: sc, dp, lse: saved.lse, out: saved.out, dout, dummy: k });
    gemm(sc, dog, dvg, d.keySide);
    gemm(dp, qg, dkg, d.keySide);
    gemm(dp, kg, dqg, d.byKeys);
    unpackHeads(dqg, dq, qp, round);
    unpackHeads(dkg, dk, { ...kp, parts }, round);
    unpackHeads(dvg, dv, { ...kp, parts }, round);
  }
  for (const t of [qg, dog, dqg, kg, vg, dkg, dvg, sc, dp]) t.dispose();
  return [dq, dk, dv];
}
