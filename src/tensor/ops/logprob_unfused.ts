/**
 * The unfused log-prob path (shaders/logprob_unfused.wgsl): log-softmax written to [N, V], then a
 * gather of the target column and, optionally, an entropy pass over the written rows. It exists as
 * the baseline of bench/logprob_bench.ts; it records no backward (training uses `logprobEntropy`).
 */
import { gpu, type KernelSpec, packParams } from "../../gpu/mod.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";

const WG = 256;

/**
 * The kernel of one pass and how many rows a workgroup takes (one per invocation for the gather,
 * one per workgroup otherwise), for `grid1d(rows, perGroup)`; bench/logprob_device.ts times the
 * raw kernels through it.
 */
export function unfusedKernel(
  entry: "log_softmax" | "gather" | "entropy",
): { spec: KernelSpec; perGroup: number } {
  return {
    spec: { shader: "logprob_unfused", entry, defines: { WG } },
    perGroup: entry === "gather" ? WG : 1,
  };
}

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
  const { spec, perGroup } = unfusedKernel("log_softmax");
  gpu().dispatch(spec, {
    params: packParams([N, V, { f32: options.temperature ?? 1 }, 0]),
    buffers: [logits.buffer, out.buffer],
    workgroups: grid1d(N, perGroup),
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
  const gather = unfusedKernel("gather");
  gpu().dispatch(gather.spec, {
    params,
    buffers: [lsm.buffer, targets.buffer, logProbs.buffer],
    workgroups: grid1d(N, gather.perGroup),
  });
  let entropy: Tensor | null = null;
  if (options.withEntropy) {
    entropy = Tensor.empty([N], "f32", "entropy");
    const { spec, perGroup } = unfusedKernel("entropy");
    gpu().dispatch(spec, {
      params,
      buffers: [lsm.buffer, entropy.buffer],
      workgroups: grid1d(N, perGroup),
    });
  }
  lsm.dispose();
  return { logProbs, entropy };
}
