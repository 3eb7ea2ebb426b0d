/**
 * Fused PPO policy losses (shaders/ppo_loss.wgsl): ratio, clip, dual-clip (vanilla) or the
 * sequence-level ratio (gspo), the optional KL loss and entropy bonus, and the loss aggregation,
 * with verl's semantics (src/algos/actor_loss.ts and policy_loss.ts are the references). The loss
 * stays on the GPU as a [1] tensor with a backward into the log-probs (and the entropy); the
 * statistics land in a small [6] tensor that the trainer sums on the GPU and reads once per step.
 */
import { KL_ESTIMATORS } from "../kl.ts";
import type { LossAggMode } from "../agg.ts";
import { gpu, packParams } from "../../gpu/mod.ts";
import { record, registerOp, Registry } from "../../tensor/mod.ts";
import { Tensor } from "../../tensor/mod.ts";
import { grid1d } from "../../tensor/mod.ts";
import { aggregate, checkBatch, type LossAggOptions, maskType } from "./ppo_loss_agg.ts";

const WG = 128; // invocations per workgroup, passed to shaders/ppo_loss.wgsl as #const WG

registerOp(
  "ppo_policy_loss",
  "logProb, oldLogProb, advantages [B, R] f32, mask [B, R] (+ entropy, refLogProb) -> loss [1] = " +
    "agg(vanilla clipped/dual-clipped or gspo PPO loss) - entropy_coeff agg(entropy) + " +
    "kl_loss_coef agg(kl); backward into logProb and entropy",
);

/** How the kernel runs one `actor.policy_loss.loss_mode`. */
export interface GpuPolicyLoss {
  /** `loss_mode` of shaders/ppo_loss.wgsl */
  code: number;
  /** aggregation of the pg loss when the loss fixes it (gspo), else loss_agg_mode */
  pgAggMode?: LossAggMode;
  /** whether clip_ratio_c applies (and must be > 1) */
  dualClip: boolean;
}

/**
 * The policy losses the GPU runs, by verl name. Every name of src/algos' POLICY_LOSSES needs an
 * entry here (a test checks it): the trainer has no CPU fallback.
 */
export const GPU_POLICY_LOSSES: Registry<GpuPolicyLoss> = new Registry("GPU policy loss");
GPU_POLICY_LOSSES.register("vanilla", { code: 0, dualClip: true });
GPU_POLICY_LOSSES.register("gspo", { code: 1, pgAggMode: "seq-mean-token-mean", dualClip: false });

/** The GPU form of `actor.policy_loss.loss_mode` `name`; an error naming the key when none. */
export function gpuPolicyLoss(name: string): GpuPolicyLoss {
  if (!GPU_POLICY_LOSSES.has(name)) {
    throw new Error(
      `actor.policy_loss.loss_mode "${name}" has no GPU implementation; GPU policy losses: ` +
        GPU_POLICY_LOSSES.names().join(", "),
    );
  }
  return GPU_POLICY_LOSSES.get(name);
}

/** Names of the entries of `stats`, in order (verl's metric names). */
export const POLICY_LOSS_STATS = [
  "actor/pg_loss",
  "actor/pg_clipfrac",
  "actor/ppo_kl",
  "actor/pg_clipfrac_lower",
  "actor/entropy",
  "actor/kl_loss",
] as const;

/** `actor.*` keys in camelCase, verl's defaults in brackets. */
export interface PpoPolicyLossOptions extends LossAggOptions {
  /** actor.policy_loss.loss_mode [vanilla]: a name of GPU_POLICY_LOSSES */
  lossMode?: string;
  /** ε [0.2] */
  clipRatio?: number;
  /** lower ε [clipRatio] */
  clipRatioLow?: number;
  /** upper ε [clipRatio] */
  clipRatioHigh?: number;
  /** dual-clip bound c for negative advantages, > 1 [3] */
  clipRatioC?: number;
  /** per-token entropy [B, R] (from logprobEntropy); needed when entropyCoeff != 0 */
  entropy?: Tensor;
  /** actor.entropy_coeff [0] */
  entropyCoeff?: number;
  /** reference log-probs [B, R]; needed when useKlLoss */
  refLogProb?: Tensor;
  /** actor.use_kl_loss [false] */
  useKlLoss?: boolean;
  /** actor.kl_loss_coef [0.001] */
  klLossCoef?: number;
  /** actor.kl_loss_type [low_var_kl]: kl|k1, abs, mse|k2, low_var_kl|k3, each with `+` */
  klLossType?: string;
}

export interface PpoLossResult {
  /** [1] the scalar to call backward on */
  loss: Tensor;
  /** [k] statistics, see POLICY_LOSS_STATS / VALUE_LOSS_STATS; no gradient */
  stats: Tensor;
}

const KL_CODES: Record<string, number> = {
  kl: 0,
  k1: 0,
  abs: 1,
  mse: 2,
  k2: 2,
  low_var_kl: 3,
  k3: 3,
};

function klCode(type: string): { code: number; straight: boolean } {
  KL_ESTIMATORS.get(type); // throws listing the valid names
  const straight = type.endsWith("+");
  return { code: KL_CODES[straight ? type.slice(0, -1) : type], straight };
}

/**
 * verl's policy loss (`lossMode`) of one micro-batch, plus entropy bonus and KL loss as dp_actor
 * assembles them, aggregated by `lossAggMode` (with batchNumTokens / globalBatchSize so that
 * micro-batches of a mini-batch share a denominator; gspo's pg loss is always
 * seq-mean-token-mean, its entropy and KL terms follow `lossAggMode`, as in verl). Masked
 * positions may hold anything.
 */
export function ppoPolicyLoss(
  logProb: Tensor,
  oldLogProb: Tensor,
  advantages: Tensor,
  responseMask: Tensor,
  options: PpoPolicyLossOptions = {},
): PpoLossResult {
  const { entropy, refLogProb } = options;
  const floats: Record<string, Tensor> = { logProb, oldLogProb, advantages };
  if (entropy) floats.entropy = entropy;
  if (options.useKlLoss) {
    if (!refLogProb) throw new Error("ppoPolicyLoss: useKlLoss needs refLogProb");
    floats.refLogProb = refLogProb;
  }
  const [B, R] = checkBatch("ppoPolicyLoss", floats, responseMask);
  const pl = gpuPolicyLoss(options.lossMode ?? "vanilla");
  const ec = options.entropyCoeff ?? 0;
  if (ec !== 0 && !entropy) throw new Error("ppoPolicyLoss: entropyCoeff != 0 needs the entropy");
  const eps = options.clipRatio ?? 0.2;
  const c = options.clipRatioC ?? 3;
  if (pl.dualClip && !(c > 1)) throw new Error(`ppoPolicyLoss: clip_ratio_c must be > 1, got ${c}`);
  const useKl = options.useKlLoss ?? false;
  const klc = useKl ? options.klLossCoef ?? 0.001 : 0;
  const kl = klCode(options.klLossType ?? "low_var_kl");
  const params = packParams([
    B,
    R,
    { f32: options.clipRatioLow ?? eps },
    { f32: options.clipRatioHigh ?? eps },
    { f32: c },
    kl.code,
    kl.straight ? 1 : 0,
    useKl ? 1 : 0,
    entropy ? 1 : 0,
    { f32: klc },
    { f32: ec },
    pl.code,
  ]);
  const defines = { MaskT: maskType(responseMask), WG };
  const g = gpu();
  const partials = Tensor.empty([B, 8], "f32", "ppo_loss.partials");
  g.dispatch({ shader: "ppo_loss", entry: "policy_rows", defines }, {
    params,
    buffers: [
      logProb.buffer,
      oldLogProb.buffer,
      advantages.buffer,
      responseMask.buffer,
      (entropy ?? logProb).buffer, // unread stand-ins keep every declared binding bound
      (useKl ? refLogProb! : logProb).buffer,
      partials.buffer,
    ],
    workgroups: grid1d(B, 1),
  });
  // columns: 1 pg loss (agg), 2 clipped, 3 -log ratio, 4 dual-clipped (token means),
  // 5 entropy (agg), 6 kl (agg), 7 gspo's sequence log-ratio (carried to the backward)
  const agg = aggregate("ppoPolicyLoss", partials, [B, R], {
    aggBits: 0b1100010,
    nstats: 6,
    coefs: [0, 1, 0, 0, 0, -ec, klc],
    mode1: pl.pgAggMode,
  }, options);
  partials.dispose();
  const inputs = entropy ? [logProb, entropy] : [logProb];
  record("ppo_policy_loss", inputs, agg.loss, (gLoss) => {
    const grads: (Tensor | null)[] = [null, null];
    if (logProb.requiresGrad) {
      const gl = Tensor.empty([B, R], "f32", "ppo_loss.dlogprob");
      g.dispatch({ shader: "ppo_loss", entry: "policy_grad", defines }, {
        params,
        buffers: [
          logProb.buffer,
          oldLogProb.buffer,
          advantages.buffer,
          responseMask.buffer,
          agg.rowWeights.buffer,
          (useKl ? refLogProb! : logProb).buffer,
          gLoss.buffer,
          gl.buffer,
        ],
        workgroups: grid1d(B * R, WG),
      });
      grads[0] = gl;
    }
    if (entropy?.requiresGrad && ec !== 0) {
      const ge = Tensor.empty(entropy.shape, "f32", "ppo_loss.dentropy");
      g.dispatch({ shader: "ppo_loss", entry: "entropy_grad", defines }, {
        params,
        buffers: [responseMask.buffer, agg.rowWeights.buffer, gLoss.buffer, ge.buffer],
        workgroups: grid1d(B * R, WG),
      });
      grads[1] = ge;
    }
    agg.rowWeights.dispose();
    return grads.slice(0, inputs.length);
  });
  if (!agg.loss.node) agg.rowWeights.dispose();
  return { loss: agg.loss, stats: agg.stats };
}
