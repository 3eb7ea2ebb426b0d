import { gpu, packParams } from "../../gpu/mod.ts";
import { isGradEnabled, record, registerOp } from "../autograd.ts";
import { Tensor } from "../tensor.ts";
import {
  type AttentionOptions,
  combineSplits,
  floatsFit,
  type Geometry,
  paramFields,
  smallTiles,
  splitParts,
  validate,
} from "./attention_common.ts";
import { decodeApplies, dispatchDecode } from "./attention_decode.ts";
import { bytesPerPair, gemmBackward, gemmForward, pairsPerChunk } from "./attention_gemm.ts";

export type { AttentionOptions, AttentionPrecision } from "./attention_common.ts";

registerOp(
  "attention",
  "grouped-query scaled dot-product attention (causal, key padding mask, kv-length views); " +
    "batched GEMMs over (batch, kv head) chunks or flash-style row kernels, saving the row " +
    "logsumexp; recompute backward for q, k and v; f32, or f16 rounding as torch's fp16 attention",
);

// Aim for at least this many workgroups before splitting the key range of a forward pass.
const TARGET_WORKGROUPS = 1024;
const MIN_SPLIT_KEYS = 64;
const FWD_BK = 16;
const BWD_TPR = 4; // threads per query row (dq) or key (dkv) in both backward kernels

export type AttentionGemm = "auto" | "always" | "never";

/** Which kernels `attention` runs for training and prefill calls. Mutable for benchmarks and tests. */
export const attentionPolicy = {
  /**
   * auto: the GEMM path (attention_gemm.ts) wherever one (batch, kv head) pair's [G * T, L] score
   * matrix fits the budget, else the flash-style row kernels; always: the GEMM path or an error;
   * never: the row kernels. Decode-shaped no-grad calls take attention_decode either way. Why:
   * on an H100 the row kernels ran at 0.8-1.7 TFLOP/s where the tiled GEMM reaches 15-23.
   */
  gemm: "auto" as AttentionGemm,
  /**
   * Bytes one chunk's score matrix [pairs, G * T, L] may take (also capped by the device's
   * binding size); the backward holds two of them.
   */
  budgetBytes: 256 * 2 ** 20,
  /**
   * The GEMM backward's dK and dV as one product per query head (T rows each, B * Hq products,
   * summed while unpacking) rather than per kv head (G * T rows, B * Hkv products): G times the
   * workgroups for the same work, which a large GPU needs when B * Hkv is small.
   */
  keySidePerHead: true,
  /**
   * Precision "f16" stores the GEMM path's packed q, k, v and dO as halves where the GPU has
   * shader-f16; false (or no shader-f16) keeps f32 buffers holding the same rounded values. The
   * products of halves are exact in f32, so both give the same numbers; halves take half the
   * memory and bandwidth.
   */
  f16Operands: true,
};

/** Pairs per chunk of the GEMM path for this call, 0 for the row kernels. */
function gemmChunk(g: Geometry): number {
  if (g.half) return halfChunk(g);
  if (attentionPolicy.gemm === "never") return 0;
  const cap = Math.min(gpu().limits.maxStorageBufferBindingSize, attentionPolicy.budgetBytes);
  const chunk = g.packed || g.T === 0 || g.L === 0 ? 0 : pairsPerChunk(g, cap);
  if (chunk === 0 && attentionPolicy.gemm === "always") {
    throw new Error(
      `attention: the GEMM path does not apply (B ${g.B}, T ${g.T}, kvLength ${g.L}, Hq ${g.Hq}, ` +
        `Hkv ${g.Hkv}, D ${g.D}, ${g.packed ? "f16" : "f32"} k/v, budget ${cap} bytes); set ` +
        `attentionPolicy.gemm to "auto" or "never"`,
    );
  }
  return chunk;
}

/**
 * Precision f16 runs on the GEMM path whatever the policy's budget: one pair per chunk where a
 * pair's scratch alone exceeds it, an error where it exceeds the device's binding size. A call
 * with no query or no key takes the row kernels, which write its zeros.
 */
function halfChunk(g: Geometry): number {
  if (g.T === 0 || g.L === 0) return 0;
  const binding = gpu().limits.maxStorageBufferBindingSize;
  const budget = Math.min(binding, attentionPolicy.budgetBytes);
  const chunk = Math.max(pairsPerChunk(g, budget), Math.min(1, pairsPerChunk(g, binding)));
  if (attentionPolicy.gemm === "never" || chunk === 0) {
    throw new Error(
      `attention: precision f16 runs on the GEMM path only (policy ${attentionPolicy.gemm}; ` +
        `B ${g.B}, T ${g.T}, kvLength ${g.L}, Hq ${g.Hq}, Hkv ${g.Hkv}, D ${g.D}: ` +
        `${bytesPerPair(g)} bytes of scratch per (batch, kv head) pair, binding limit ` +
        `${binding}); use precision f32, or shorter sequences`,
    );
  }
  return chunk;
}

/** The dtype of the GEMM path's packed operands for this call. */
function operandsOf(g: Geometry): "f32" | "f16" {
  return g.half && attentionPolicy.f16Operands && gpu().hasF16 ? "f16" : "f32";
}

interface Tile {
  bq: number;
  bk: number;
  tpr: number;
}

/** Query rows per forward workgroup: small for decode-like calls, else the largest that fits. */
function forwardTile(rows: number, D: number): Tile {
  const dp = Math.ceil(D / 4) * 4;
  if (smallTiles()) return { bq: 4, bk: 4, tpr: 4 };
  for (const bq of [16, 8, 4]) {
    if (bq > 4 && rows <= bq / 2) continue;
    if (floatsFit((bq + 2 * FWD_BK) * dp + bq * FWD_BK)) {
      return { bq, bk: FWD_BK, tpr: bq >= 16 ? 4 : 8 };
    }
  }
  return { bq: 4, bk: FWD_BK, tpr: 8 };
}

/** Block size shared by both backward kernels (query rows and keys per block). */
function backwardTile(D: number): number {
  const dp = Math.ceil(D / 4) * 4;
  if (smallTiles()) return 4;
  for (const t of [16, 8]) {
    const dq = 4 * t * dp + t * t + t * BWD_TPR;
    const dkv = 4 * t * dp + 2 * t * t + 2 * t;
    if (floatsFit(Math.max(dq, dkv))) return t;
  }
  return 4;
}

function dispatchForward(g: Geometry, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor) {
  const rows = g.T * g.G;
  const { bq, bk, tpr } = forwardTile(rows, g.D);
  const xBlocks = Math.ceil(rows / bq);
  const groups = xBlocks * g.Hkv * g.B;
  let nsplit = 1;
  if (groups < TARGET_WORKGROUPS && g.L >= 2 * MIN_SPLIT_KEYS) {
    nsplit = Math.min(Math.ceil(TARGET_WORKGROUPS / groups), Math.floor(g.L / MIN_SPLIT_KEYS));
  }
  const chunk = Math.ceil(Math.ceil(Math.max(g.L, 1) / nsplit) / bk) * bk;
  nsplit = Math.max(1, Math.ceil(g.L / chunk));
  nsplit = Math.min(nsplit, Math.floor(gpu().limits.maxComputeWorkgroupsPerDimension / g.B));
  const spec = {
    shader: "attention_fwd",
    defines: { D: g.D, BQ: bq, BK: bk, TPR: tpr },
  };
  const params = packParams([...paramFields(g), nsplit, nsplit === 1 ? g.L : chunk, 0]);
  const maskBuf = g.mask?.buffer ?? k.buffer;
  if (nsplit === 1) {
    gpu().dispatch(spec, {
      params,
      buffers: [q.buffer, k.buffer, v.buffer, maskBuf, out.buffer, lse.buffer],
      workgroups: [xBlocks, g.Hkv, g.B],
    });
    return;
  }
  const parts = splitParts(g, nsplit);
  gpu().dispatch(spec, {
    params,
    buffers: [q.buffer, k.buffer, v.buffer, maskBuf, parts.o.buffer, parts.lse.buffer],
    workgroups: [xBlocks, g.Hkv, g.B * nsplit],
  });
  combineSplits(g, parts, out, lse);
}

function dispatchBackward(
  g: Geometry,
  saved: { q: Tensor; k: Tensor; v: Tensor; out: Tensor; stats: Tensor },
  dout: Tensor,
): [Tensor, Tensor, Tensor] {
  const { q, k, v, out, stats } = saved;
  const dq = Tensor.empty(q.shape, "f32", "attention.dq");
  const dk = Tensor.empty(k.shape, "f32", "attention.dk");
  const dv = Tensor.empty(v.shape, "f32", "attention.dv");
  const tile = backwardTile(g.D);
  const params = packParams([...paramFields(g), 0, 0, 0]);
  const maskBuf = g.mask?.buffer ?? k.buffer;
  const rows = g.T * g.G;
  const bwd = { D: g.D, TPR: BWD_TPR };
  gpu().dispatch({ shader: "attention_bwd_dq", defines: { ...bwd, BQ: tile, BK: tile } }, {
    params,
    buffers: [
      q.buffer,
      k.buffer,
      v.buffer,
      maskBuf,
      out.buffer,
      dout.buffer,
      stats.buffer,
      dq.buffer,
    ],
    workgroups: [Math.ceil(rows / tile), g.Hkv, g.B],
  });
  gpu().dispatch({ shader: "attention_bwd_dkv", defines: { ...bwd, KB: tile, QB: tile } }, {
    params,
    buffers: [
      q.buffer,
      k.buffer,
      v.buffer,
      maskBuf,
      dout.buffer,
      stats.buffer,
      dk.buffer,
      dv.buffer,
    ],
    workgroups: [Math.ceil(g.S / tile), g.Hkv, g.B],
  });
  return [dq, dk, dv];
}

/**
 * Grouped-query attention: q [B, T, Hq, D], k and v [B, S, Hkv, D] -> [B, T, Hq, D]. Query head h
 * reads kv head floor(h / (Hq / Hkv)). A query row that sees no key (left padding under a causal
 * mask) outputs zeros and gets zero gradients. k/v may be views of a larger cache (`kvLength`).
 * The saved row statistics live until backward or the end of the enclosing scope: run the
 * backward inside the scope that ran the forward. `attentionPolicy` picks the kernels;
 * `precision` "f16" rounds as torch's fp16 attention does (AttentionOptions).
 */
export function attention(q: Tensor, k: Tensor, v: Tensor, options: AttentionOptions = {}): Tensor {
  const g = validate(q, k, v, options);
  const out = Tensor.empty(q.shape, "f32", "attention");
  // The forward's row logsumexp, then room for the backward's delta = dO . O per row.
  const stats = Tensor.empty([2, g.B, g.Hq, g.T], "f32", "attention.stats");
  const noGrad = !isGradEnabled() || ![q, k, v].some((t) => t.requiresGrad);
  const decode = !g.half && decodeApplies(g, noGrad, options.decodeKernel);
  const chunk = decode ? 0 : gemmChunk(g);
  const run = { chunk, operands: operandsOf(g) };
  if (decode) dispatchDecode(g, q, k, v, { out, lse: stats });
  else if (chunk > 0) gemmForward(g, { q, k, v }, { out, lse: stats }, run);
  else dispatchForward(g, q, k, v, out, stats);
  if (noGrad) {
    stats.dispose();
    return out;
  }
  return record("attention", [q, k, v], out, (dout) => {
    const grads = chunk > 0
      ? gemmBackward(g, { q, k, v, out, lse: stats }, dout, {
        ...run,
        perHead: attentionPolicy.keySidePerHead,
      })
      : dispatchBackward(g, { q, k, v, out, stats }, dout);
    stats.dispose();
    return grads;
  });
}
