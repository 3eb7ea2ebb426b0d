/**
 * filter_groups: DAPO's dynamic sampling (`algorithm.filter_groups`). A group (the rollout.n
 * responses of one prompt, one uid) whose responses all have the same `metric` value gives every
 * group estimator a zero advantage, so it is dropped; generation batches of data.gen_batch_size
 * prompts are sampled and scored until data.train_batch_size groups are kept, and the kept groups
 * beyond that are cut off. A group of one is always kept. After max_num_gen_batches batches
 * (0 or less: no limit) without enough groups the step fails. Logs train/num_gen_batches.
 */
import type { PromptItem } from "../../data/mod.ts";
import { concatBatches, type ScoredBatch, takeRows } from "../batch.ts";
import type { TrainerParts } from "../parts.ts";

/** One generated and scored batch, with the metrics of its reward stage. */
export interface Sampled {
  batch: ScoredBatch;
  metrics: Record<string, number>;
}

/** The per-sample value a group is judged by: a token sum or a reward_extra_info column. */
export function groupMetricValues(batch: ScoredBatch, metric: string): number[] {
  const R = batch.responseLength;
  if (metric === "seq_reward" || metric === "seq_final_reward") {
    // Without use_kl_in_reward (the config requires it here) token rewards equal token scores.
    return Array.from({ length: batch.size }, (_, b) => {
      let s = 0;
      for (let t = b * R; t < b * R + R; t++) s += batch.tokenLevelScores[t];
      return s;
    });
  }
  const column = batch.rewardExtraInfo[metric];
  if (!column) {
    const have = ["seq_reward", "seq_final_reward", ...Object.keys(batch.rewardExtraInfo)];
    throw new Error(
      `algorithm.filter_groups.metric=${metric}: the reward function gave no such ` +
        `reward_extra_info column (available: ${have.join(", ")}; acc needs ` +
        "reward_model.reward_manager=dapo or a dict return with acc)",
    );
  }
  return column.map((v, b) => {
    if (typeof v === "number") return v;
    if (typeof v === "boolean") return v ? 1 : 0;
    throw new Error(
      `algorithm.filter_groups.metric=${metric}: sample ${b} (uid ${batch.uid[b]}) has ` +
        `${JSON.stringify(v)}, not a number`,
    );
  });
}

/** uids to keep: groups whose metric has a non-zero (population) std, and groups of one. */
export function keptGroups(uids: readonly string[], values: readonly number[]): Set<string> {
  const byUid = new Map<string, number[]>();
  uids.forEach((u, b) => byUid.set(u, [...(byUid.get(u) ?? []), values[b]]));
  const kept = new Set<string>();
  for (const [u, xs] of byUid) {
    const mean = xs.reduce((a, x) => a + x, 0) / xs.length;
    const variance = xs.reduce((a, x) => a + (x - mean) ** 2, 0) / xs.length;
    if (xs.length === 1 || variance > 0) kept.add(u);
  }
  return kept;
}

/** Failure counts add up over the generation batches; means and other values average. */
function mergeMetrics(all: Record<string, number>[]): Record<string, number> {
  const out: Record<string, number> = {};
  const keys = new Set(all.flatMap((m) => Object.keys(m)));
  for (const k of keys) {
    const xs = all.flatMap((m) => (k in m ? [m[k]] : []));
    const total = xs.reduce((a, x) => a + x, 0);
    out[k] = k.startsWith("reward/") && !k.endsWith("/mean") ? total : total / xs.length;
  }
  return out;
}

/**
 * Samples generation batches (the first from `first`, then from the training loader) with
 * `sample(items, k)` until enough groups survive; returns train_batch_size * rollout.n samples.
 */
export async function filterGroups(
  parts: TrainerParts,
  first: PromptItem[],
  sample: (items: PromptItem[], k: number) => Promise<Sampled>,
): Promise<Sampled> {
  const cfg = parts.config, fg = cfg.algorithm.filter_groups;
  const want = cfg.data.train_batch_size, n = cfg.actor_rollout_ref.rollout.n;
  let kept: ScoredBatch | null = null, prompts = 0, items = first;
  const metrics: Record<string, number>[] = [];
  for (let k = 1;; k++) {
    const s = await sample(items, k);
    metrics.push(s.metrics);
    const keep = keptGroups(s.batch.uid, groupMetricValues(s.batch, fg.metric!));
    prompts += keep.size;
    const rows = s.batch.uid.flatMap((u, b) => (keep.has(u) ? [b] : []));
    const part = takeRows(s.batch, rows);
    kept = kept ? concatBatches(kept, part, parts.tokenizer.padTokenId) : part;
    if (prompts >= want) {
      // groups are contiguous (gen repeats each prompt n times), so this keeps whole groups
      const batch = takeRows(kept, Array.from({ length: want * n }, (_, i) => i));
      return { batch, metrics: { ...mergeMetrics(metrics), "train/num_gen_batches": k } };
    }
    if (fg.max_num_gen_batches > 0 && k >= fg.max_num_gen_batches) {
      throw new Error(
        `dynamic sampling: ${k} generation batches kept ${prompts} of the ` +
          `data.train_batch_size=${want} prompts needed, and ` +
          `algorithm.filter_groups.max_num_gen_batches=${fg.max_num_gen_batches} allows no more ` +
          `(too many prompts whose ${fg.metric} is the same for all ${n} responses); raise it, ` +
          "set it to 0 for no limit, or use easier/harder data",
      );
    }
    items = parts.trainLoader.next() ?? parts.trainLoader.next() ??
      (() => {
        throw new Error("the training set yields no batch (is data.train_files empty?)");
      })();
  }
}
