/**
 * Supervised fine-tuning: masked cross-entropy on the response tokens (verl's fsdp_sft_trainer).
 * The loss of a batch is the sum over its response tokens divided by their count, accumulated
 * over micro-batches, so the gradient does not depend on the micro-batch size. Checkpoints and
 * resume are the PPO trainer's (stages/save.ts): the optimizer, the step (hence the learning
 * rate's place in its schedule) and the loader's position continue exactly.
 */
import { DataLoader, type SftExample } from "../data/mod.ts";
import { backward, mulScalar, noGrad, scope, sum, Tensor } from "../tensor/mod.ts";
import { gpu } from "../gpu/mod.ts";
import type { CausalModel } from "./actor.ts";
import { type Packing, packingOf, type ScoredRows, scoredRowsOf } from "../nn/mod.ts";
import { chunks, range } from "./batch.ts";
import { type Optimizer, optimizerStep } from "./optimizer_step.ts";
import type { Logger } from "../tracking/mod.ts";
import type { CheckpointStore } from "./parts.ts";
import { resume, save } from "./stages/save.ts";
import { learningRate } from "./util.ts";

interface MicroInputs {
  ids: Tensor; // [b, T] i32
  mask: Tensor; // [b, T] i32
  pos: Tensor; // [b, T] i32
  targets: Tensor; // [b * T] i32, -100 outside the response
  tokens: number;
  /** use_remove_padding: the passes run on the real tokens only. */
  packing?: Packing;
  /** The positions with a target: the only rows the LM head runs on. */
  scored: ScoredRows | null;
}

/**
 * Right-pads prompt + response; position t predicts token t + 1 where that token is a response
 * token the loss mask keeps.
 */
export function sftInputs(
  examples: SftExample[],
  options: { removePadding?: boolean } = {},
): MicroInputs {
  const T = Math.max(2, ...examples.map((e) => e.promptIds.length + e.responseIds.length));
  const n = examples.length;
  const ids = new Int32Array(n * T), mask = new Int32Array(n * T), pos = new Int32Array(n * T);
  const targets = new Int32Array(n * T).fill(-100);
  let tokens = 0;
  examples.forEach((e, i) => {
    const seq = [...e.promptIds, ...e.responseIds];
    seq.forEach((id, t) => {
      ids[i * T + t] = id;
      mask[i * T + t] = 1;
      pos[i * T + t] = t;
    });
    for (let r = 0; r < e.responseIds.length; r++) {
      if (e.lossMask && !e.lossMask[r]) continue;
      targets[i * T + e.promptIds.length - 1 + r] = e.responseIds[r];
      tokens++;
    }
  });
  return {
    ids: Tensor.from(ids, [n, T], "i32"),
    mask: Tensor.from(mask, [n, T], "i32"),
    pos: Tensor.from(pos, [n, T], "i32"),
    targets: Tensor.from(targets, [n * T], "i32"),
    tokens,
    packing: options.removePadding ? packingOf(mask, [n, T]) : undefined,
    scored: scoredRowsOf(targets, [n, T], options.removePadding ? mask : null),
  };
}

/** Response tokens the loss covers (all, or those the loss mask keeps). */
export function trainedTokens(e: SftExample): number {
  return e.lossMask ? e.lossMask.reduce((a, m) => a + (m ? 1 : 0), 0) : e.responseIds.length;
}

/** Σ -log p(target) over the response tokens (ignored targets give log p = 0). */
function sumLoss(model: CausalModel, m: MicroInputs): Tensor {
  const out = model.tokenLogProbs(m.ids, {
    positionIds: m.pos,
    attentionMask: m.mask,
    targets: m.targets,
    packing: m.packing,
    scored: m.scored,
  });
  return mulScalar(sum(out.logProbs), -1);
}

/** Sums scalar losses with one readback for all micro-batches, and releases them. */
async function readSum(losses: Tensor[]): Promise<number> {
  const bytes = await gpu().read(losses.map((l) => ({ buffer: l.buffer, size: l.byteSize })));
  for (const l of losses) l.dispose();
  return bytes.reduce((a, b) => a + new Float32Array(b)[0], 0);
}

/** Mean response-token loss over a set of examples (no gradient). */
export async function sftEvalLoss(
  model: CausalModel,
  examples: SftExample[],
  microBatchSize: number,
  options: { removePadding?: boolean } = {},
): Promise<number> {
  let tokens = 0;
  const losses: Tensor[] = [];
  for (const rows of chunks(range(examples.length), microBatchSize)) {
    const loss = scope(() => {
      const m = sftInputs(rows.map((i) => examples[i]), options);
      tokens += m.tokens;
      return noGrad(() => sumLoss(model, m));
    });
    losses.push(loss.keep());
  }
  return tokens ? (await readSum(losses)) / tokens : 0;
}

export interface SftFitOptions {
  model: CausalModel;
  optimizer: Optimizer;
  train: SftExample[];
  val: SftExample[];
  batchSize: number;
  microBatchSize: number;
  /** use_remove_padding: pack each micro-batch's real tokens (the same loss, less work). */
  removePadding?: boolean;
  totalSteps: number;
  lr: number;
  warmupStepsRatio: number;
  scheduler: "constant" | "cosine";
  clipGrad: number;
  /** Seed of the shuffle (trainer.seed). */
  seed: number;
  shuffle: boolean;
  testFreq: number;
  tracking: Logger;
  /**
   * Where checkpoints go, after steps that `saveFreq` selects and at the end; its resume point
   * (checked at setup) restores the optimizer and the data position before the first step.
   */
  checkpoints?: CheckpointStore | null;
  saveFreq: number;
  print?: (line: string) => void;
}

export interface SftFitResult {
  /** The global step reached (the resumed one when nothing was left to train). */
  step: number;
  /** Steps this call trained. */
  trained: number;
  /** val/loss after the last step (NaN when no step ran). */
  valLoss: number;
}

/**
 * Runs optimizer steps up to `totalSteps` over the examples (epochs wrap around with a new
 * shuffle), starting after the resumed checkpoint's step, if any.
 */
export async function sftFit(o: SftFitOptions): Promise<SftFitResult> {
  const trainLoader = new DataLoader(o.train, {
    batchSize: o.batchSize,
    shuffle: o.shuffle,
    seed: o.seed,
    noun: "examples",
  });
  const parts = { ...o, checkpoints: o.checkpoints ?? null, trainLoader };
  const start = await resume(parts);
  let valLoss = NaN;
  for (let step = start + 1; step <= o.totalSteps; step++) {
    const batch = (trainLoader.next() ?? trainLoader.next())!;
    const totalTokens = batch.reduce((a, e) => a + trainedTokens(e), 0);
    const t0 = performance.now();
    const losses: Tensor[] = [];
    for (const rows of chunks(range(batch.length), o.microBatchSize)) {
      const loss = scope(() => {
        const m = sftInputs(rows.map((i) => batch[i]), { removePadding: o.removePadding });
        const loss = sumLoss(o.model, m);
        backward(mulScalar(loss, 1 / totalTokens));
        return loss;
      });
      losses.push(loss.keep());
    }
    const lossSum = await readSum(losses);
    const lr = learningRate(step - 1, {
      lr: o.lr,
      totalSteps: o.totalSteps,
      warmupSteps: Math.floor(o.warmupStepsRatio * o.totalSteps),
      style: o.scheduler,
    });
    const st = await optimizerStep(o.optimizer, { lr, gradClip: o.clipGrad });
    const metrics: Record<string, number> = {
      "train/loss": lossSum / totalTokens,
      "train/lr": lr,
      "train/grad_norm": st.gradNorm,
      "train/epoch": trainLoader.epoch,
      "timing_s/step": (performance.now() - t0) / 1000,
    };
    const last = step === o.totalSteps;
    if ((o.testFreq > 0 && step % o.testFreq === 0) || last) {
      valLoss = await sftEvalLoss(o.model, o.val, o.microBatchSize, {
        removePadding: o.removePadding,
      });
      metrics["val/loss"] = valLoss;
    }
    o.tracking.log(step, metrics); // on disk before the checkpoint that covers the step
    if ((o.saveFreq > 0 && step % o.saveFreq === 0) || last) await save(parts, step);
  }
  return {
    step: Math.max(start, o.totalSteps),
    trained: Math.max(0, o.totalSteps - start),
    valLoss,
  };
}
