/** gen: left-pads the prompts, repeats each n times (grouped by uid) and samples responses. */
import type { PromptItem } from "../../data/mod.ts";
import type { Tick } from "../../tracking/mod.ts";
import { deriveSeed } from "../../tensor/mod.ts";
import type { GenBatch } from "../batch.ts";
import type { TrainerParts } from "../parts.ts";

export interface GenOptions {
  step: number;
  n: number;
  /** Validation samples with `rollout.val_kwargs` and a seed stream of their own. */
  validation: boolean;
  uidPrefix: string;
  /** Greedy decoding whatever the config says (remax's baseline rollout). */
  greedy?: boolean;
  onProgress?: Tick;
  /** k-th generation batch of a step (dynamic sampling); k > 1 gets a seed stream of its own */
  genBatch?: number;
}

export async function gen(
  parts: TrainerParts,
  items: PromptItem[],
  options: GenOptions,
): Promise<GenBatch> {
  const cfg = parts.config.actor_rollout_ref.rollout;
  const sampling = options.validation ? { ...cfg, ...cfg.val_kwargs } : cfg;
  const P = Math.max(1, ...items.map((it) => it.inputIds.length));
  const B0 = items.length;
  const prompts = new Int32Array(B0 * P).fill(parts.tokenizer.padTokenId); // [B0, P]
  const promptMask = new Int32Array(B0 * P); // [B0, P]
  items.forEach((it, b) => {
    prompts.set(it.inputIds, b * P + P - it.inputIds.length);
    promptMask.fill(1, b * P + P - it.inputIds.length, b * P + P);
  });
  const out = await parts.rollout({
    inputIds: prompts,
    attentionMask: promptMask,
    batch: B0,
    promptLength: P,
  }, {
    n: options.n,
    responseLength: parts.config.data.max_response_length,
    temperature: sampling.temperature,
    topK: sampling.top_k,
    topP: sampling.top_p,
    doSample: options.greedy ? false : sampling.do_sample,
    seed: (options.genBatch ?? 1) > 1
      ? deriveSeed(parts.config.trainer.seed, options.step, 2, options.genBatch!)
      : deriveSeed(parts.config.trainer.seed, options.step, options.validation ? 1 : 0),
    returnLogProbs: cfg.calculate_log_probs,
    onProgress: options.onProgress,
  });
  const n = options.n, B = B0 * n, R = parts.config.data.max_response_length;
  const rep = <T>(xs: T[]) => xs.flatMap((x) => Array<T>(n).fill(x));
  const repRows = (src: Int32Array) => {
    const dst = new Int32Array(B * P);
    for (let b = 0; b < B; b++) {
      dst.set(src.subarray(Math.floor(b / n) * P, Math.floor(b / n) * P + P), b * P);
    }
    return dst;
  };
  return {
    size: B,
    promptLength: P,
    responseLength: R,
    uid: rep(items.map((it) => `${options.uidPrefix}-${it.index}`)),
    dataSource: rep(items.map((it) => it.dataSource)),
    groundTruth: rep(items.map((it) => it.groundTruth)),
    extraInfo: rep(items.map((it) => it.extraInfo)),
    prompts: repRows(prompts),
    promptMask: repRows(promptMask),
    responses: out.responses,
    responseMask: out.responseMask,
    rolloutLogProbs: out.logProbs,
  };
}
