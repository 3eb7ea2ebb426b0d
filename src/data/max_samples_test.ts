import assert from "node:assert/strict";
import { charTokenizer } from "../io/mod.ts";
import { RLDataset } from "./dataset.ts";
import { pickSamples } from "./max_samples.ts";
import { writeParquet } from "./parquet.ts";
import { loadSftExamples } from "./sft_data.ts";

Deno.test("pickSamples: all for -1 or a large max, the first rows unshuffled, a seeded choice", () => {
  assert.equal(pickSamples(10, { max: -1, shuffle: true, seed: 1 }), null);
  assert.equal(pickSamples(10, { max: 10, shuffle: true, seed: 1 }), null);
  assert.deepEqual([...pickSamples(10, { max: 3, shuffle: false, seed: 1 })!], [0, 1, 2]);
  const a = pickSamples(100, { max: 5, shuffle: true, seed: 1 })!;
  assert.equal(a.size, 5);
  assert.deepEqual(a, pickSamples(100, { max: 5, shuffle: true, seed: 1 }), "seeded");
  assert.notDeepEqual(a, pickSamples(100, { max: 5, shuffle: true, seed: 2 }));
  assert.notDeepEqual([...a], [0, 1, 2, 3, 4]);
});

const tok = charTokenizer();

Deno.test("train_max_samples: the RL and SFT loaders keep the chosen rows across files", async () => {
  const row = (i: number) => ({
    data_source: "s",
    prompt: [{ role: "user", content: `q${i}` }],
    reward_model: { style: "rule", ground_truth: `${i}` },
    extra_info: { answer: `a${i}` },
  });
  const a = await Deno.makeTempFile({ suffix: ".parquet" });
  const b = await Deno.makeTempFile({ suffix: ".parquet" });
  await writeParquet(a, { rows: [0, 1, 2].map(row) });
  await writeParquet(b, { rows: [3, 4, 5, 6].map(row) });
  const rl = (max: number, shuffle: boolean) =>
    RLDataset.load([a, b], tok, {
      maxPromptLength: 16,
      maxSamples: { max, shuffle, seed: 3 },
      log: () => {},
    });
  const first = await rl(4, false);
  assert.deepEqual(first.items.map((it) => it.groundTruth), ["0", "1", "2", "3"]);
  assert.deepEqual(
    first.items.map((it) => [it.file, it.row]).at(-1),
    [b, 0],
    "rows keep their place",
  );
  const chosen = await rl(3, true);
  const want = [...pickSamples(7, { max: 3, shuffle: true, seed: 3 })!].sort((x, y) => x - y);
  assert.deepEqual(chosen.items.map((it) => Number(it.groundTruth)), want);
  assert.equal((await rl(-1, true)).length, 7);
  const sft = await loadSftExamples([a, b], tok, {
    promptKey: "prompt",
    responseKey: "extra_info",
    promptDictKeys: [],
    responseDictKeys: ["answer"],
    maxLength: 64,
    truncation: "error",
    maxSamples: { max: 2, shuffle: false, seed: 1 },
  });
  assert.equal(sft.length, 2);
  assert.equal(tok.decode(sft[1].responseIds, { skipSpecialTokens: true }), "a1");
  for (const f of [a, b]) await Deno.remove(f);
});
