/**
 * The backward of `lmHeadLogprob` (lm_head_logprob.ts), chunk group by chunk group: each chunk's
 * logits (kept from the forward, or recomputed), their gradient in place
 * (shaders/lm_head_logprob.wgsl `chunk_backward`), then d hidden += dz W_c and d W_c = dz^T h,
 * as one batched product per group (lm_head_chunks.ts).
 */
import { gpu, type Params } from "../../gpu/mod.ts";
import { Tensor } from "../tensor.ts";
import { accumulate } from "./basic.ts";
import { colsumInto } from "./colsum.ts";
import { toF16 } from "./elementwise_kernel.ts";
import { grid1d } from "./grid.ts";
import {
  chunkAt,
  type ChunkGroup,
  dHiddenGemm,
  dWeightGemm,
  logitsGemm,
  sliceRows,
} from "./lm_head_chunks.ts";
import { gemm } from "./matmul_kernel.ts";

const WG = 256; // one logit per invocation

export interface BackwardParts {
  hidden: Tensor; // [N, C] (f16 under mixed precision)
  weight: Tensor; // [V, C] (the f16 copy under mixed precision)
  targets: Tensor; // [N]
  g: Tensor; // [K, N] (or [N] for K = 1)
  saved: Tensor; // [2, N]
  dh: Tensor | null; // [N, C], written
  dw: Tensor | null; // [V, C], written
  groups: ChunkGroup[];
  /** Columns of the widest chunk. */
  cols: number;
  withEntropy: boolean;
  /** The forward's logits, one [count, N, w] per group (used up here); null: recompute. */
  logits: Tensor[] | null;
  params: (v0: number, w: number, first: boolean) => Params;
}

export function chunkedBackward(b: BackwardParts): void {
  const { hidden, weight, dh, dw, cols, groups } = b;
  const C = weight.shape[1], N = b.targets.size;
  const single = groups.length === 1 && groups[0].count === 1;
  const most = Math.max(...groups.map((grp) => grp.count));
  const scratch = b.logits ? null : Tensor.empty([N, cols], "f32", "lm_head_logprob.dlogits");
  const slice = single
    ? weight
    : Tensor.empty([most * cols, C], weight.dtype, "lm_head_logprob.weight");
  // d hidden: one chunk's product, or a group's [count, N, C] summed over the group
  const part = dh && !single ? Tensor.empty([N, C], "f32", "lm_head.dh_part") : null;
  const parts = dh && most > 1 ? Tensor.empty([most, N, C], "f32", "lm_head.dh_parts") : null;
  const dwc = dw && !single ? Tensor.empty([most * cols, C], "f32", "lm_head.dw_chunk") : dw;
  const defines = { WITH_ENTROPY: b.withEntropy, WITH_SPP: false, WG };
  groups.forEach((group, gi) => {
    const { v0, w, count } = group;
    if (!single) sliceRows(weight, slice, v0, count * w);
    const z = b.logits?.[gi] ?? scratch!;
    if (!b.logits) gemm(hidden, slice, z, logitsGemm(group, N, C)); // one chunk: count 1
    for (let i = 0; i < count; i++) {
      gpu().dispatch({ shader: "lm_head_logprob", entry: "chunk_backward", defines }, {
        params: b.params(v0 + i * w, w, false),
        buffers: [chunkAt(z, i, N, w), b.targets.buffer, b.saved.buffer, b.g.buffer],
        workgroups: grid1d(N * w, WG),
      });
    }
    // mixed precision (f16 operands): the logit gradient in f16, as autocast's matmul sees it
    const dz = hidden.dtype === "f16" ? toF16(z) : z;
    if (dh) {
      // [count, N, C] = dz [count, N, w] @ W_c [count, w, C], summed over the group into dh
      const first = gi === 0;
      const into = count > 1 ? parts! : first ? dh : part!;
      gemm(dz, slice, into, dHiddenGemm(group, N, C));
      if (count > 1) colsumInto(parts!, count, N * C, first ? dh : part!);
      if (!first) accumulate(dh, part!);
    }
    if (dw && dwc) {
      // [count, w, C] = dz^T [count, w, N] @ h [N, C], then into rows [v0, v0 + count w) of dW
      gemm(dz, hidden, dwc, dWeightGemm(group, N, C));
      if (!single) gpu().copy(dwc.buffer, 0, dw.buffer, v0 * C * 4, count * w * C * 4);
    }
    if (dz !== z) dz.dispose();
    if (b.logits) z.dispose();
  });
  for (const t of single ? [scratch] : [scratch, slice, part, parts, dwc]) t?.dispose();
}
