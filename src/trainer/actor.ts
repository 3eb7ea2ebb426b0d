/**
 * The actor (and the frozen reference): log-probs of the sampled tokens under the current policy,
 * and the PPO update with mini-batches and micro-batch gradient accumulation. The loss is the
 * fused GPU policy loss of src/algos (ppo_micro_loss.ts), back-propagated through the model
 * without a readback; src/algos' computeActorLoss is its CPU reference, for tests.
 */
import { gpuPolicyLoss } from "../algos/mod.ts";
import { gpu } from "../gpu/mod.ts";
import { backward, logprobEntropy, noGrad, scope, Tensor } from "../tensor/mod.ts";
import { type Batch, chunks, range, responseSlice, sequenceInputs } from "./batch.ts";
import type { Optimizer } from "./optimizer_step.ts";
import { updateLoop } from "./minibatch.ts";
import {
  type ActorLossConfig,
  actorMicroLoss,
  actorStatNames,
  microBatchSeed,
} from "./ppo_micro_loss.ts";

/** What the trainer needs of a model: a forward, its parameters, and their values for saving. */
export interface TrainableModel {
  params(): Map<string, Tensor>; // HF name -> parameter
  toArrays(): Promise<Map<string, Float32Array>>; // one readback of every parameter
}

/** What the actor needs of a causal LM. */
export interface CausalModel extends TrainableModel {
  forward(
    inputIds: Tensor,
    options: { positionIds: Tensor; attentionMask: Tensor },
  ): Tensor; // logits [B, T, V]
}

export interface SequenceTensors {
  ids: Tensor; // [b, T] i32
  mask: Tensor; // [b, T] i32
  pos: Tensor; // [b, T] i32
  targets: Tensor; // [b * T] i32, -100 off the response
}

/** Uploads prompt + response rows as model inputs. */
export function uploadSequences(batch: Batch, rows: readonly number[]): SequenceTensors {
  const s = sequenceInputs(batch, rows);
  const shape = [s.rows, s.length];
  return {
    ids: Tensor.from(s.inputIds, shape, "i32", "input_ids"),
    mask: Tensor.from(s.attentionMask, shape, "i32", "attention_mask"),
    pos: Tensor.from(s.positionIds, shape, "i32", "position_ids"),
    targets: Tensor.from(s.targets, [s.rows * s.length], "i32", "targets"),
  };
}

/**
 * Log-probs (and optionally entropies) of the response tokens, `[B, R]` each, computed in
 * micro-batches with the tape off; all micro-batches are read back in one round trip.
 */
export async function computeLogProbs(
  model: CausalModel,
  batch: Batch,
  options: { microBatchSize: number; withEntropy: boolean; temperature?: number },
): Promise<{ logProbs: Float32Array; entropys: Float32Array | null }> {
  const P = batch.promptLength, R = batch.responseLength;
  const parts: { rows: number[]; lp: Tensor; ent: Tensor | null }[] = [];
  noGrad(() => {
    for (const rows of chunks(range(batch.size), options.microBatchSize)) {
      const kept = scope(() => {
        const t = uploadSequences(batch, rows);
        const logits = model.forward(t.ids, { positionIds: t.pos, attentionMask: t.mask });
        return logprobEntropy(logits, t.targets, {
          withEntropy: options.withEntropy,
          temperature: options.temperature ?? 1,
        });
      });
      parts.push({ rows, lp: kept.logProbs.keep(), ent: kept.entropy?.keep() ?? null });
    }
  });
  const ranges = parts.flatMap((p) => [p.lp, ...(p.ent ? [p.ent] : [])])
    .map((t) => ({ buffer: t.buffer, size: t.byteSize }));
  const bytes = await gpu().read(ranges);
  const logProbs = new Float32Array(batch.size * R);
  const entropys = options.withEntropy ? new Float32Array(batch.size * R) : null;
  let k = 0;
  for (const p of parts) {
    const lp = responseSlice(new Float32Array(bytes[k++]), p.rows.length, P, R);
    p.rows.forEach((b, i) => logProbs.set(lp.subarray(i * R, i * R + R), b * R));
    if (entropys) {
      const e = responseSlice(new Float32Array(bytes[k++]), p.rows.length, P, R);
      p.rows.forEach((b, i) => entropys.set(e.subarray(i * R, i * R + R), b * R));
    }
    p.lp.dispose();
    p.ent?.dispose();
  }
  return { logProbs, entropys };
}

export interface ActorUpdateOptions {
  ppoEpochs: number;
  miniBatchSize: number; // samples (prompts x n)
  microBatchSize: number;
  shuffle: boolean;
  seed: number;
  step: number;
  lr: number;
  gradClip: number;
  temperature: number;
  loss: ActorLossConfig;
}

/**
 * PPO epochs over shuffled mini-batches; returns verl's actor/* metrics. Each micro-batch runs
 * forward -> logprobEntropy -> the fused policy loss -> backward on the GPU; the loss statistics
 * are summed on the GPU and read with each mini-batch's grad norm.
 */
export async function updateActor(
  model: CausalModel,
  optimizer: Optimizer,
  batch: Batch,
  o: ActorUpdateOptions,
): Promise<Record<string, number>> {
  gpuPolicyLoss(o.loss.policyLoss); // a loss_mode without a GPU form fails before any work
  const T = batch.promptLength + batch.responseLength;
  const withEntropy = o.loss.entropyCoeff !== 0;
  let micro = 0; // micro-batches so far in this update, for clip_cov's seed
  const { metrics, skipped } = await updateLoop(
    batch,
    optimizer,
    { ...o, stream: 17 },
    { gradNorm: "actor/grad_norm", stats: actorStatNames(o.loss) },
    (mb) => {
      const t = uploadSequences(batch, mb.rows);
      const logits = model.forward(t.ids, { positionIds: t.pos, attentionMask: t.mask });
      // [n, T] targets give [n, T] log-probs and entropies, the layout the loss takes
      const targets = t.targets.reshape([mb.rows.length, T]);
      const out = logprobEntropy(logits, targets, { withEntropy, temperature: o.temperature });
      const res = actorMicroLoss(out, batch, mb, o.loss, microBatchSeed(o.seed, o.step, micro++));
      backward(res.loss);
      return res.stats;
    },
  );
  // The CPU reference reports the (constant) KL coefficient per micro-batch; its mean is itself.
  if (o.loss.useKlLoss) metrics["actor/kl_coef"] = o.loss.klLossCoef;
  return { ...metrics, "actor/lr": o.lr, "actor/skipped_steps": skipped };
}
