/**
 * The unfused log-prob path (shaders/logprob_unfused.wgsl): log-softmax written to [N, V], then a
 * gather of the target column and, optionally, an entropy pass over the written rows. It exists as
 * the baseline of bench/logprob_bench.ts; it records no backward (training uses `logprobEntropy`).
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";

const WG = 256; // matches shaders/logprob_unfused.wgsl

function check(logits: Tensor, targets: Tensor): number {
  const V = logits.shape.at(-1) ?? 0;
  if (
    logits.dtype !== "f32" || targets.dtype !== "i32" || V === 0 ||
    targets.size !== logits.size / V
  ) {
    throw new Error(
      `unfusedLogProbs: expected f32 logits [N, V] and i32 targets [N], got logits ` +
        `${fmtShape(logits.shape)} ${logits.dtype}, targets ${fmtShape(targets.shape)} ` +
        targets.dtype,
    );
  }
  return V;
}

/** log softmax(logits / temperature) over the last dim, written in full: [N, V]. */
export function logSoftmaxRows(logits: Tensor, options: { temperature?: number } = {}): Tensor {
  const V = logits.shape.at(-1) ?? 0;
  if (logits.dtype !== "f32" || V === 0) {
    throw new Error(
      `logSoftmaxRows: expected f32 [.., V], got ${fmtShape(logits.shape)} ` +
        logits.dtype,
    );
  }
  const N = logits.size / V;
  const out = Tensor.empty([N, V], "f32", "log_softmax");
  gpu().dispatch({ shader: "logprob_unfused", entry: "log_softmax" }, {
    params: packParams([N, V, { f32: options.temperature ?? 1 }, 0]),
    buffers: [logits.buffer, out.buffer],
    workgroups: grid1d(N, 1),
  });
  return out;
}

/**
 * log p(target) [N] (and the entropy [N]) through a materialised [N, V] log-softmax: three
 * dispatches and an extra [N, V] buffer, which is what the fused kernel avoids.
 */
export function unfusedLogProbs(
  logits: Tensor,
  targets: Tensor,
  options: { temperature?: number; withEntropy?: boolean } = {},
): { logProbs: Tensor; entropy: Tensor | null } {
  const V = check(logits, targets);
  const N = logits.size / V;
  const lsm = logSoftmaxRows(logits, options);
  const params = packParams([N, V, { f32: 1 }, 0]);
  const logProbs = Tensor.empty([N], "f32", "logprob");
  gpu().dispatch({ shader: "logprob_unfused", entry: "gather" }, {
    params,
    buffers: [lsm.buffer, targets.buffer, logProbs.buffer],
    workgroups: grid1d(N, WG),
  });
  let entropy: Tensor | null = null;
  if (options.withEntropy) {
    entropy = Tensor.empty([N], "f32", "entropy");
    gpu().dispatch({ shader: "logprob_unfused", entry: "entropy" }, {
      params,
      buffers: [lsm.buffer, entropy.buffer],
      workgroups: grid1d(N, 1),
    });
  }
  lsm.dispose();
  return { logProbs, entropy };
}
