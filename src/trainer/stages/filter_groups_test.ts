import assert from "node:assert/strict";
import type { PromptItem } from "../../data/mod.ts";
import type { ScoredBatch } from "../batch.ts";
import type { TrainerParts } from "../parts.ts";
import { filterGroups, groupMetricValues, keptGroups, type Sampled } from "./filter_groups.ts";

Deno.test("keptGroups: a group is kept when its metric varies, or when it has one sample", () => {
  const uids = ["a", "a", "b", "b", "b", "c", "d", "d"];
  const vals = [1, 1, 0, 1, 0, 1, 0.5, 0.5];
  assert.deepEqual([...keptGroups(uids, vals)].sort(), ["b", "c"]);
});

/** A scored batch of `groups` prompts x n samples whose seq_reward is `scores[g][i]`. */
function scored(tag: string, scores: number[][], P: number): ScoredBatch {
  const n = scores[0].length, B = scores.length * n, R = 2;
  const tokenLevelScores = new Float32Array(B * R);
  scores.flat().forEach((s, b) => (tokenLevelScores[b * R + 1] = s));
  const prompts = new Int32Array(B * P).map((_, i) => 100 + (i % P));
  return {
    size: B,
    promptLength: P,
    responseLength: R,
    uid: scores.flatMap((_, g) => Array<string>(n).fill(`${tag}-${g}`)),
    dataSource: Array(B).fill("s"),
    groundTruth: Array(B).fill(""),
    extraInfo: Array(B).fill({}),
    prompts,
    promptMask: new Int32Array(B * P).fill(1),
    responses: new Int32Array(B * R).map((_, i) => i),
    responseMask: new Int32Array(B * R).fill(1),
    tokenLevelScores,
    responseTexts: Array(B).fill("r"),
    rewardExtraInfo: { acc: scores.flat().map((s) => s > 0) as unknown as number[] },
  };
}

function fakeParts(
  o: { want: number; n: number; maxBatches: number; metric: string },
  served: { count: number },
): TrainerParts {
  return {
    config: {
      data: { train_batch_size: o.want },
      actor_rollout_ref: { rollout: { n: o.n } },
      algorithm: {
        filter_groups: { enable: true, metric: o.metric, max_num_gen_batches: o.maxBatches },
      },
    },
    tokenizer: { padTokenId: 0 },
    trainLoader: { next: () => (served.count++, [] as PromptItem[]) },
  } as unknown as TrainerParts;
}

Deno.test("filterGroups: keeps varying groups over two batches, re-pads prompts, truncates", async () => {
  const batches = [
    scored("g1", [[1, 1], [0, 1], [0, 0], [1, 0]], 3), // keeps groups 1 and 3
    scored("g2", [[0, 1], [1, 1], [1, 0], [0, 1]], 5), // keeps 0, 2, 3 -> 5 >= 3: done
  ];
  const served = { count: 0 };
  const parts = fakeParts({ want: 3, n: 2, maxBatches: 0, metric: "seq_reward" }, served);
  const sample = (_: PromptItem[], k: number): Promise<Sampled> =>
    Promise.resolve({ batch: batches[k - 1], metrics: { "reward/failed": k, "reward/x/mean": k } });
  const out = await filterGroups(parts, [], sample);
  assert.equal(served.count, 1); // one more batch of prompts came from the loader
  assert.deepEqual(out.batch.uid, ["g1-1", "g1-1", "g1-3", "g1-3", "g2-0", "g2-0"]);
  assert.equal(out.batch.size, 6);
  assert.equal(out.batch.promptLength, 5);
  // a 3-token prompt of the first batch is left-padded to 5 with the pad id and mask 0
  assert.deepEqual([...out.batch.prompts.subarray(0, 5)], [0, 0, 100, 101, 102]);
  assert.deepEqual([...out.batch.promptMask.subarray(0, 5)], [0, 0, 1, 1, 1]);
  assert.deepEqual(groupMetricValues(out.batch, "seq_reward"), [0, 1, 1, 0, 0, 1]);
  assert.deepEqual(groupMetricValues(out.batch, "acc"), [0, 1, 1, 0, 0, 1]);
  assert.deepEqual(out.metrics, {
    "reward/failed": 3, // counts add up
    "reward/x/mean": 1.5, // means average
    "train/num_gen_batches": 2,
  });
});

Deno.test("filterGroups: max_num_gen_batches stops with an error; 0 means no limit", async () => {
  const flat = scored("z", [[1, 1], [0, 0]], 2); // nothing varies
  const good = scored("y", [[0, 1], [1, 0]], 2);
  const run = (maxBatches: number, goodAt: number) => {
    const parts = fakeParts({ want: 2, n: 2, maxBatches, metric: "seq_reward" }, { count: 0 });
    return filterGroups(
      parts,
      [],
      (_, k) => Promise.resolve({ batch: k === goodAt ? good : flat, metrics: {} }),
    );
  };
  await assert.rejects(
    () => run(3, 99),
    /3 generation batches kept 0 of the data\.train_batch_size=2 .*max_num_gen_batches=3/,
  );
  const unlimited = await run(0, 7); // six batches with nothing kept, then enough
  assert.equal(unlimited.metrics["train/num_gen_batches"], 7);
  const negative = await run(-1, 4);
  assert.equal(negative.metrics["train/num_gen_batches"], 4);
});

Deno.test("groupMetricValues: a missing column names the key and the columns there are", () => {
  const b = scored("m", [[1, 0]], 2);
  assert.throws(
    () => groupMetricValues(b, "score"),
    /algorithm\.filter_groups\.metric=score: .*available: seq_reward, seq_final_reward, acc/,
  );
});
