/**
 * Fused log-softmax + gather + entropy (shaders/logprob.wgsl): log p(target) and the entropy of
 * every position from logits in one pass over the vocabulary, without materialising [N, V]
 * probabilities, and one backward that takes the gradients of both outputs.
 */
import { gpu, type KernelSpec, packParams } from "../../gpu/mod.ts";
import { record, registerOp } from "../autograd.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { zeros } from "./basic.ts";
import { grid1d, rowDefines } from "./grid.ts";

const WG = 256; // backward: one logit per invocation
/** Targets equal to it are ignored (log-prob 0, no log-prob gradient), as in torch. */
export const IGNORE_INDEX = -100;

registerOp(
  "logprob_entropy",
  "logits [N, V] or [B, T, V] f32, targets i32 [N] -> stacked [2, N] (log softmax(logits / T) at " +
    "the target, entropy) in one pass per row; target -100 gives log-prob 0 and no log-prob " +
    "gradient (its entropy is still computed); backward recomputes p per element",
);
registerOp(
  "logprob_entropy.row",
  "row r of the stacked [K, N] logprob/entropy output; the backward scatters into a [K, N] zero " +
    "gradient, so seeding both rows reaches the fused node as one gradient",
);

export interface LogprobEntropyOptions {
  /** Logits are divided by it first, as verl's actor does with the rollout temperature. [1] */
  temperature?: number;
  /** Also compute the entropy -sum p log p of each position. [false] */
  withEntropy?: boolean;
}

/** Both outputs take the shape of `targets` ([N], or [B, T] to feed the [B, R] losses). */
export interface LogprobEntropyResult {
  /** log p(target), shaped like targets; 0 where the target is -100, NaN for any other out-of-range target. */
  logProbs: Tensor;
  /** entropy of softmax(logits / temperature), computed for ignored positions too. */
  entropy: Tensor | null;
}

/**
 * The kernel of one pass and how many rows (forward) or logits (backward) a workgroup takes, for
 * `grid1d(count, perGroup)`; bench/logprob_device.ts times the raw kernels through it.
 */
export function logprobKernel(
  entry: "forward" | "backward",
  options: { vocab: number; withEntropy: boolean },
): { spec: KernelSpec; perGroup: number } {
  const defines = { WITH_ENTROPY: options.withEntropy };
  if (entry === "forward") {
    return {
      spec: { shader: "logprob", entry, defines: { ...defines, ...rowDefines(options.vocab) } },
      perGroup: 1,
    };
  }
  return { spec: { shader: "logprob", entry, defines: { ...defines, WG } }, perGroup: WG };
}

function check(logits: Tensor, targets: Tensor, temperature: number): number {
  const desc = `logits ${fmtShape(logits.shape)} ${logits.dtype}, targets ` +
    `${fmtShape(targets.shape)} ${targets.dtype}`;
  if (logits.dtype !== "f32" || targets.dtype !== "i32") {
    throw new Error(`logprobEntropy: expected f32 logits and i32 targets, got ${desc}`);
  }
  const V = logits.shape.at(-1) ?? 0;
  if ((logits.rank !== 2 && logits.rank !== 3) || V === 0) {
    throw new Error(`logprobEntropy: logits must be [N, V] or [B, T, V] with V > 0, got ${desc}`);
  }
  if (targets.size !== logits.size / V) {
    throw new Error(`logprobEntropy: need one target per logits row, got ${desc}`);
  }
  if (!(temperature > 0) || !Number.isFinite(temperature)) {
    throw new Error(`logprobEntropy: temperature must be finite and > 0, got ${temperature}`);
  }
  return V;
}

/**
 * Log-probabilities of `targets` under softmax(logits / temperature), and optionally the entropy.
 * With entropy, both outputs are rows of one recorded [2, N] tensor, so
 * `backward([logProbs, entropy], [gLp, gEnt])` runs the fused backward once with both gradients.
 * The saved per-row logsumexp lives until backward or the end of the enclosing scope: run
 * backward inside the scope that ran the forward.
 */
export function logprobEntropy(
  logits: Tensor,
  targets: Tensor,
  options: LogprobEntropyOptions = {},
): LogprobEntropyResult {
  const temperature = options.temperature ?? 1;
  const withEntropy = options.withEntropy ?? false;
  const V = check(logits, targets, temperature);
  const N = logits.size / V;
  const kernel = (entry: "forward" | "backward") => logprobKernel(entry, { vocab: V, withEntropy });
  const params = packParams([N, V, { f32: temperature }, 0]);
  const out = Tensor.empty(withEntropy ? [2, N] : targets.shape, "f32", "logprob");
  const saved = Tensor.empty([2, N], "f32", "logprob.saved"); // lse, entropy
  if (N > 0) {
    const { spec, perGroup } = kernel("forward");
    gpu().dispatch(spec, {
      params,
      buffers: [logits.buffer, targets.buffer, out.buffer, saved.buffer],
      workgroups: grid1d(N, perGroup),
    });
  }
  record("logprob_entropy", [logits], out, (g) => {
    const dx = Tensor.empty(logits.shape, "f32", "logprob.dlogits");
    if (N > 0) {
      const { spec, perGroup } = kernel("backward");
      gpu().dispatch(spec, {
        params,
        buffers: [logits.buffer, targets.buffer, saved.buffer, g.buffer, dx.buffer],
        workgroups: grid1d(N * V, perGroup),
      });
    }
    saved.dispose();
    return [dx];
  });
  if (!out.node) saved.dispose();
  if (!withEntropy) return { logProbs: out, entropy: null };
  return {
    logProbs: stackedRow(out, 0, targets.shape),
    entropy: stackedRow(out, 1, targets.shape),
  };
}

/** Row r of a [K, N] tensor as its own tensor of `shape` (a copy), with autograd. */
export function stackedRow(stacked: Tensor, r: number, shape: readonly number[]): Tensor {
  const [K, N] = stacked.shape;
  const out = Tensor.empty(shape, "f32", r === 0 ? "logprob" : "entropy");
  if (N > 0) gpu().copy(stacked.buffer, r * N * 4, out.buffer, 0, N * 4);
  return record("logprob_entropy.row", [stacked], out, (g) => {
    const full = zeros([K, N], "logprob.grad");
    if (N > 0) gpu().copy(g.buffer, 0, full.buffer, r * N * 4, N * 4);
    return [full];
  });
}
