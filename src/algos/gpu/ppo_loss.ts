/**
 * Fused PPO policy losses (shaders/ppo_loss.wgsl): every loss of src/algos/policy_losses (the
 * references, with actor_loss.ts for the whole objective) in one rows pass, after the token choice
 * of clip_cov / kl_cov (ppo_loss_cov.ts), plus the optional KL loss and entropy bonus and the loss
 * aggregation, with verl's semantics. The loss stays on the GPU as a [1] tensor with a backward
 * into the log-probs (and the entropy); the statistics land in a small [6] tensor that the trainer
 * sums on the GPU and reads once per mini-batch.
 */
import { KL_ESTIMATORS } from "../kl.ts";
import type { PolicyLossOptions } from "../policy_loss.ts";
import { gpu, packParams } from "../../gpu/mod.ts";
import { record, registerOp } from "../../tensor/mod.ts";
import { Tensor } from "../../tensor/mod.ts";
import { grid1d } from "../../tensor/mod.ts";
import { aggregate, checkBatch, type LossAggOptions, maskType } from "./ppo_loss_agg.ts";
import { covSelect } from "./ppo_loss_cov.ts";
import { gpuPolicyLoss } from "./ppo_loss_modes.ts";

const WG = 128; // invocations per workgroup, passed to shaders/ppo_loss.wgsl as #const WG

registerOp(
  "ppo_policy_loss",
  "logProb, oldLogProb, advantages [B, R] f32, mask [B, R] (+ entropy, refLogProb) -> loss [1] = " +
    "agg(policy loss of loss_mode) - entropy_coeff agg(entropy) + kl_loss_coef agg(kl); " +
    "backward into logProb and entropy",
);

/** Names of the entries of `stats`, in order (verl's metric names). */
export const POLICY_LOSS_STATS = [
  "actor/pg_loss",
  "actor/pg_clipfrac",
  "actor/ppo_kl",
  "actor/pg_clipfrac_lower",
  "actor/entropy",
  "actor/kl_loss",
] as const;

/** The loss settings of src/algos' PolicyLossOptions the GPU honours. */
type LossSettings = Pick<
  PolicyLossOptions,
  | "clipRatio"
  | "clipRatioLow"
  | "clipRatioHigh"
  | "clipRatioC"
  | "tauPos"
  | "tauNeg"
  | "clipCovRatio"
  | "clipCovLb"
  | "clipCovUb"
  | "klCovRatio"
  | "ppoKlCoef"
  | "rolloutIs"
  | "rolloutIsThreshold"
  | "seed"
>;

/** `actor.*` keys in camelCase, verl's defaults in brackets (see PolicyLossOptions). */
export interface PpoPolicyLossOptions extends LossAggOptions, LossSettings {
  /** actor.policy_loss.loss_mode [vanilla]: a name of GPU_POLICY_LOSSES */
  lossMode?: string;
  /** clip_cov, kl_cov: the valid tokens of `responseMask` (Σ mask), which size their choice */
  validTokens?: number;
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

const IS_LEVELS = { none: 0, token: 1, sequence: 2 } as const;

function klCode(type: string): { code: number; straight: boolean } {
  KL_ESTIMATORS.get(type); // throws listing the valid names
  const straight = type.endsWith("+");
  return { code: KL_CODES[straight ? type.slice(0, -1) : type], straight };
}

/**
 * verl's policy loss (`lossMode`) of one micro-batch, plus entropy bonus and KL loss as dp_actor
 * assembles them, aggregated by `lossAggMode` (with batchNumTokens / globalBatchSize so that
 * micro-batches of a mini-batch share a denominator; gspo's and sapo's pg loss is always
 * seq-mean-token-mean and geo_mean's a mean over rows, while their entropy and KL terms follow
 * `lossAggMode`, as in verl). Masked positions may hold anything.
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
  const low = options.clipRatioLow ?? eps, high = options.clipRatioHigh ?? eps;
  const c = options.clipRatioC ?? 3;
  if (pl.dualClip && !(c > 1)) throw new Error(`ppoPolicyLoss: clip_ratio_c must be > 1, got ${c}`);
  const tauPos = options.tauPos ?? 1.0, tauNeg = options.tauNeg ?? 1.05;
  if (pl.code === 2 && !(tauPos > 0 && tauNeg > 0)) {
    throw new Error(
      `ppoPolicyLoss: sapo's tau_pos and tau_neg must be > 0, got ${tauPos}, ${tauNeg}`,
    );
  }
  const useKl = options.useKlLoss ?? false;
  const klc = useKl ? options.klLossCoef ?? 0.001 : 0;
  const kl = klCode(options.klLossType ?? "low_var_kl");
  const params = packParams([
    B,
    R,
    { f32: low },
    { f32: high },
    { f32: c },
    kl.code,
    kl.straight ? 1 : 0,
    useKl ? 1 : 0,
    entropy ? 1 : 0,
    { f32: klc },
    { f32: ec },
    pl.code,
    { f32: tauPos },
    { f32: tauNeg },
    { f32: options.ppoKlCoef ?? 0.1 },
    IS_LEVELS[options.rolloutIs ?? "none"],
    { f32: options.rolloutIsThreshold ?? 2 },
    0,
    0,
  ]);
  // [B, R]: the chosen tokens of clip_cov / kl_cov in, dL_t/dlogp_t out (read by the backward)
  const tok = pl.select
    ? covSelect(logProb, oldLogProb, advantages, responseMask, {
      mode: pl.select,
      validTokens: requireValidTokens(options.validTokens, pl.select),
      ratio: pl.select === "kl_cov" ? options.klCovRatio ?? 0.0002 : options.clipCovRatio ?? 0.0002,
      lb: options.clipCovLb,
      ub: options.clipCovUb,
      clipLow: low,
      clipHigh: high,
      seed: options.seed,
    })
    : Tensor.empty([B, R], "f32", "ppo_loss.token_grad");
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
      tok.buffer,
    ],
    workgroups: grid1d(B, 1),
  });
  // columns: 1 pg loss (agg), 2 pg_clipfrac, 3 ppo_kl, 4 pg_clipfrac_lower terms (token means),
  // 5 entropy (agg), 6 kl (agg)
  const agg = aggregate("ppoPolicyLoss", partials, [B, R], {
    aggBits: 0b1100010,
    nstats: 6,
    coefs: [0, 1, 0, 0, 0, -ec, klc],
    mode1: pl.pgAggMode,
  }, options);
  partials.dispose();
  const inputs = entropy ? [logProb, entropy] : [logProb];
  const release = () => (agg.rowWeights.dispose(), tok.dispose());
  record("ppo_policy_loss", inputs, agg.loss, (gLoss) => {
    const grads: (Tensor | null)[] = [null, null];
    if (logProb.requiresGrad) {
      const gl = Tensor.empty([B, R], "f32", "ppo_loss.dlogprob");
      g.dispatch({ shader: "ppo_loss", entry: "policy_grad", defines }, {
        params,
        buffers: [
          logProb.buffer,
          tok.buffer,
          gLoss.buffer,
          responseMask.buffer,
          agg.rowWeights.buffer,
          (useKl ? refLogProb! : logProb).buffer,
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
    release();
    return grads.slice(0, inputs.length);
  });
  if (!agg.loss.node) release();
  return { loss: agg.loss, stats: agg.stats };
}

function requireValidTokens(n: number | undefined, mode: string): number {
  if (n === undefined) {
    throw new Error(
      `ppoPolicyLoss: loss_mode ${mode} needs validTokens (the mask's valid-token count)`,
    );
  }
  return n;
}
