/**
 * The actor (and the frozen reference): log-probs of the sampled tokens under the current policy,
 * and the PPO update with mini-batches and micro-batch gradient accumulation. The loss is the
 * fused GPU policy loss of src/algos (ppo_micro_loss.ts), back-propagated through the model
 * without a readback; src/algos' computeActorLoss is its CPU reference, for tests.
 */
import { gpuPolicyLoss } from "../algos/mod.ts";
import { gpu } from "../gpu/mod.ts";
import {
  type LoraAdapters,
  type Packing,
  packingOf,
  type ScoredRows,
  scoredRowsOf,
} from "../nn/mod.ts";
import { type LmHeadLogprobResult, noGrad, scope, Tensor } from "../tensor/mod.ts";
import { type Batch, range, responseSlice, sequenceInputs } from "./batch.ts";
import { microBatches, type MicroBatching } from "./dynamic_bsz.ts";
import { type Optimizer, scaledBackward, stepMetrics } from "./optimizer_step.ts";
import { updateLoop, type UpdateLoopOptions } from "./minibatch.ts";
import {
  type ActorLossConfig,
  actorMicroLoss,
  actorStatNames,
  microBatchSeed,
  withEntropy,
} from "./ppo_micro_loss.ts";

/** What the trainer needs of a model: a forward, its parameters, and their values for saving. */
export interface TrainableModel {
  params(): Map<string, Tensor>; // HF name -> parameter
  toArrays(): Promise<Map<string, Float32Array>>; // one readback of every parameter
  /** LoRA adapters: a checkpoint then holds them as a PEFT folder instead of the weights. */
  readonly lora?: LoraAdapters | null;
}

/** What the actor needs of a causal LM. */
export interface CausalModel extends TrainableModel {
  forward(
    inputIds: Tensor,
    options: { positionIds: Tensor; attentionMask: Tensor; packing?: Packing },
  ): Tensor; // logits [B, T, V]
  /** Per-position statistics of `targets` without [B, T, V] logits (see CausalLM). */
  tokenLogProbs(
    inputIds: Tensor,
    options: {
      positionIds: Tensor;
      attentionMask: Tensor;
      /** use_remove_padding: the real tokens only (outputs 0 at the padding) */
      packing?: Packing;
      targets: Tensor;
      /** the positions with a target: the head runs on those rows only (outputs 0 elsewhere) */
      scored?: ScoredRows | null;
      temperature?: number;
      withEntropy?: boolean;
      withSumPiSquared?: boolean;
      /** the backward takes the forward's LM-head logits when they fit (lmHeadLogprob) */
      keepBytes?: number;
    },
  ): LmHeadLogprobResult;
}

export interface SequenceTensors {
  ids: Tensor; // [b, T] i32
  mask: Tensor; // [b, T] i32
  pos: Tensor; // [b, T] i32
  targets: Tensor; // [b * T] i32, -100 off the response
  /** Where the real tokens sit, when the pass runs packed (use_remove_padding). */
  packing?: Packing;
  /** With `scoredRows`: the positions with a target, the only rows the LM head runs on. */
  scored: ScoredRows | null;
}

/**
 * Uploads prompt + response rows as model inputs, with their packing when `removePadding` and the
 * LM head's rows when `scoredRows` (the log-prob passes; the critic's value head reads every row).
 */
export function uploadSequences(
  batch: Batch,
  rows: readonly number[],
  options: { removePadding?: boolean; scoredRows?: boolean } = {},
): SequenceTensors {
  const s = sequenceInputs(batch, rows);
  const shape = [s.rows, s.length] as const;
  return {
    ids: Tensor.from(s.inputIds, shape, "i32", "input_ids"),
    mask: Tensor.from(s.attentionMask, shape, "i32", "attention_mask"),
    pos: Tensor.from(s.positionIds, shape, "i32", "position_ids"),
    targets: Tensor.from(s.targets, [s.rows * s.length], "i32", "targets"),
    packing: options.removePadding ? packingOf(s.attentionMask, shape) : undefined,
    scored: options.scoredRows
      ? scoredRowsOf(s.targets, shape, options.removePadding ? s.attentionMask : null)
      : null,
  };
}

/**
 * Log-probs (and optionally entropies and Σπ²) of the response tokens, `[B, R]` each, computed in
 * micro-batches with the tape off; all micro-batches are read back in one round trip.
 */
export async function computeLogProbs(
  model: CausalModel,
  batch: Batch,
  options: MicroBatching & {
    withEntropy: boolean;
    temperature?: number;
    /** Σ_v π_v² per position (the optimal token baselines' path weights) */
    withSumPiSquared?: boolean;
  },
): Promise<
  { logProbs: Float32Array; entropys: Float32Array | null; sumPiSquared: Float32Array | null }
> {
  const P = batch.promptLength, R = batch.responseLength;
  const temperature = options.temperature ?? 1;
  const parts: { rows: number[]; outs: (Tensor | null)[] }[] = [];
  noGrad(() => {
    for (const rows of microBatches(batch, range(batch.size), options)) {
      const kept = scope(() => {
        const t = uploadSequences(batch, rows, { ...options, scoredRows: true });
        const lp = model.tokenLogProbs(t.ids, {
          positionIds: t.pos,
          attentionMask: t.mask,
          packing: t.packing,
          scored: t.scored,
          targets: t.targets,
          withEntropy: options.withEntropy,
          withSumPiSquared: options.withSumPiSquared,
          temperature,
        });
        return [lp.logProbs, lp.entropy, lp.sumPiSquared];
      });
      parts.push({ rows, outs: kept.map((t) => t?.keep() ?? null) });
    }
  });
  const ranges = parts.flatMap((p) => p.outs.filter((t) => t !== null))
    .map((t) => ({ buffer: t.buffer, size: t.byteSize }));
  const bytes = await gpu().read(ranges);
  const full = () => new Float32Array(batch.size * R);
  const results = [
    full(),
    options.withEntropy ? full() : null,
    options.withSumPiSquared ? full() : null,
  ];
  let k = 0;
  for (const p of parts) {
    p.outs.forEach((t, j) => {
      if (t === null) return;
      const part = responseSlice(new Float32Array(bytes[k++]), p.rows.length, P, R);
      p.rows.forEach((b, i) => results[j]!.set(part.subarray(i * R, i * R + R), b * R));
      t.dispose();
    });
  }
  return { logProbs: results[0]!, entropys: results[1], sumPiSquared: results[2] };
}

/** The update loop's options (miniBatchSize in samples: prompts x n) and the actor loss's. */
export interface ActorUpdateOptions extends Omit<UpdateLoopOptions, "stream"> {
  temperature: number;
  loss: ActorLossConfig;
  /** keep_logits_gb in bytes: a micro-batch's LM-head logits kept for its backward. [0] */
  keepLogitsBytes?: number;
}

/**
 * PPO epochs over shuffled mini-batches; returns verl's actor/* metrics. Each micro-batch runs
 * the trunk -> the chunked LM head + log-prob (tokenLogProbs) -> the fused policy loss -> backward on the GPU; the loss statistics
 * are summed on the GPU and read with each mini-batch's grad norm. Under `o.audit` the micro-batches'
 * log-probs are read once more per mini-batch, before its optimizer step (see MiniBatchAudit).
 */
export async function updateActor(
  model: CausalModel,
  optimizer: Optimizer,
  batch: Batch,
  o: ActorUpdateOptions,
): Promise<Record<string, number>> {
  gpuPolicyLoss(o.loss.policyLoss); // a loss_mode without a GPU form fails before any work
  const T = batch.promptLength + batch.responseLength;
  const entropy = withEntropy(o.loss);
  let micro = 0; // micro-batches so far in this update, for clip_cov's seed
  const { metrics, skips } = await updateLoop(
    batch,
    optimizer,
    { ...o, stream: 17 },
    { gradNorm: "actor/grad_norm", stats: actorStatNames(o.loss) },
    (mb) => {
      const t = uploadSequences(batch, mb.rows, { ...o, scoredRows: true });
      // [n, T] targets give [n, T] log-probs and entropies, the layout the loss takes
      const out = model.tokenLogProbs(t.ids, {
        positionIds: t.pos,
        attentionMask: t.mask,
        packing: t.packing,
        scored: t.scored,
        targets: t.targets.reshape([mb.rows.length, T]),
        withEntropy: entropy,
        temperature: o.temperature,
        keepBytes: o.keepLogitsBytes,
      });
      const res = actorMicroLoss(out, batch, mb, o.loss, microBatchSeed(o.seed, o.step, micro++));
      scaledBackward(res.loss, optimizer);
      // an audit (bypass mode's worker check) reads the current log-probs, [n, T]
      return { stats: res.stats, probe: o.audit ? out.logProbs : null };
    },
  );
  // The CPU reference reports the (constant) KL coefficient per micro-batch; its mean is itself.
  if (o.loss.useKlLoss) metrics["actor/kl_coef"] = o.loss.klLossCoef;
  return {
    ...metrics,
    "actor/lr": o.lr,
    ...stepMetrics("actor", optimizer, skips),
  };
}
