/**
 * Cross-entropy of logits [N, V] against i32 targets [N], fused with the log-softmax. The forward
 * keeps one logsumexp per row (plus the reduction's scale) for the backward instead of [N, V]
 * probabilities; that small tensor lives in the current scope and is freed by the backward.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { record, registerOp } from "../autograd.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { grid1d, rowDefines } from "./grid.ts";

const FINALIZE_WG = 256; // one workgroup sums every row loss

export interface CrossEntropyOptions {
  /** Targets equal to this contribute no loss, no gradient and no count (default -100). */
  ignoreIndex?: number;
  /** "mean" (default) over counted targets (0 when there are none), "sum", or "none": [N]. */
  reduction?: "mean" | "sum" | "none";
}

function targetsTensor(
  targets: Tensor | Int32Array | number[],
  n: number,
  v: number,
  ignoreIndex: number,
): Tensor {
  if (targets instanceof Tensor) {
    if (targets.dtype !== "i32" || targets.shape.length !== 1 || targets.shape[0] !== n) {
      throw new Error(
        `crossEntropy: targets must be i32 [${n}], got ${fmtShape(targets.shape)} ${targets.dtype}`,
      );
    }
    return targets; // values are not checked: out-of-range targets are clamped on the GPU
  }
  if (targets.length !== n) {
    throw new Error(`crossEntropy: ${targets.length} targets for ${n} rows of logits`);
  }
  for (let i = 0; i < n; i++) {
    const t = targets[i];
    if (t !== ignoreIndex && !(Number.isInteger(t) && t >= 0 && t < v)) {
      throw new Error(
        `crossEntropy: target ${t} at row ${i} is outside [0, ${v}) and not ignoreIndex ` +
          `(${ignoreIndex})`,
      );
    }
  }
  return Tensor.from(targets, [n], "i32", "targets");
}

/**
 * Cross-entropy loss: logsumexp(logits[i]) - logits[i, targets[i]] per row, reduced as asked.
 * Targets may be an i32 tensor (out-of-range values other than ignoreIndex are clamped into
 * [0, V) on the GPU) or a CPU array (checked, then uploaded).
 */
export function crossEntropy(
  logits: Tensor,
  targets: Tensor | Int32Array | number[],
  options: CrossEntropyOptions = {},
): Tensor {
  const { ignoreIndex = -100, reduction = "mean" } = options;
  if (logits.dtype !== "f32" || logits.shape.length !== 2) {
    throw new Error(
      `crossEntropy: logits must be f32 [N, V], got ${fmtShape(logits.shape)} ${logits.dtype}`,
    );
  }
  if (!["mean", "sum", "none"].includes(reduction)) {
    throw new Error(`crossEntropy: unknown reduction "${reduction}" (mean, sum or none)`);
  }
  if (!Number.isInteger(ignoreIndex)) {
    throw new Error(`crossEntropy: ignoreIndex must be an integer, got ${ignoreIndex}`);
  }
  const [n, v] = logits.shape;
  if (v === 0 && n > 0) {
    throw new Error(`crossEntropy: logits ${fmtShape(logits.shape)} have V = 0`);
  }
  const t = targetsTensor(targets, n, v, ignoreIndex);
  const perRow = reduction === "none";
  const params = packParams([
    n,
    v,
    { i32: ignoreIndex },
    perRow ? 1 : 0,
    { f32: -Infinity },
    reduction === "mean" ? 1 : 0,
  ]);
  const lse = Tensor.empty([n + 1], "f32", "crossEntropy.lse");
  const rowLoss = Tensor.empty([n], "f32", "crossEntropy");
  gpu().dispatch({ shader: "cross_entropy", entry: "forward_main", defines: rowDefines(v) }, {
    params,
    buffers: [logits.buffer, t.buffer, lse.buffer, rowLoss.buffer],
    workgroups: grid1d(n, 1),
  });
  let out = rowLoss;
  if (!perRow) {
    out = Tensor.empty([], "f32", "crossEntropy");
    gpu().dispatch({
      shader: "cross_entropy",
      entry: "finalize_main",
      defines: { WG: FINALIZE_WG },
    }, {
      params,
      buffers: [rowLoss.buffer, t.buffer, lse.buffer, out.buffer],
      workgroups: [1],
    });
    rowLoss.dispose(); // the queue runs finalize before the buffer can be reused
  }
  record("crossEntropy", [logits], out, (g) => {
    const dx = Tensor.empty(logits.shape, "f32", "crossEntropy.grad");
    gpu().dispatch({ shader: "cross_entropy", entry: "backward_main", defines: rowDefines(v) }, {
      params,
      buffers: [logits.buffer, t.buffer, lse.buffer, g.buffer, dx.buffer],
      workgroups: grid1d(n, 1),
    });
    lse.dispose();
    if (t !== targets) t.dispose();
    return [dx];
  });
  if (!out.node) {
    lse.dispose();
    if (t !== targets) t.dispose();
  }
  return out;
}

registerOp(
  "crossEntropy",
  "crossEntropy(logits [N, V], targets i32 [N], { ignoreIndex, reduction })",
);
