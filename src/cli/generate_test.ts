import assert from "node:assert/strict";
import { charTokenizerTexts } from "../io/mod.ts";
import { writeModelFolder } from "../io/mod.ts";
import { floatTensor } from "../io/mod.ts";
import { tinyModelConfig, tinyWeights, weightShapes } from "../nn/mod.ts";
import { gpuTest } from "../testing/mod.ts";
import { readParquet, writeParquet } from "../data/mod.ts";
import { charTokenizer } from "../io/mod.ts";
import { main } from "./generate.ts";

async function fixture() {
  const dir = await Deno.makeTempDir({ prefix: "generate_test_" });
  const tok = charTokenizer();
  const config = tinyModelConfig({ vocabSize: tok.vocabSize, eosTokenId: tok.eosTokenId });
  const shapes = weightShapes(config);
  const arrays = tinyWeights(config, { seed: 4, std: 0.3 });
  const tensors = new Map([...arrays].map(([k, v]) => [k, floatTensor(shapes.get(k)!, v)]));
  await writeModelFolder(`${dir}/model`, { config, tensors, tokenizerFiles: charTokenizerTexts() });
  await writeParquet(`${dir}/prompts.parquet`, {
    rows: ["1+2=", "7*8=", "hello"].map((content, i) => ({
      data_source: "arith",
      prompt: [{ role: "user", content }],
      extra_info: { index: i },
    })),
  });
  return dir;
}

const quiet = { print: () => {} };

gpuTest("generate writes every input row plus n responses each", async () => {
  const dir = await fixture();
  const out = `${dir}/out/gen.parquet`;
  const summary = await main([
    `model.path=${dir}/model`,
    `data.path=${dir}/prompts.parquet`,
    `data.output_path=${out}`,
    "data.n_samples=2",
    "data.batch_size=2",
    "rollout.response_length=6",
    "rollout.top_k=5",
  ], quiet);
  assert.equal(summary.responses, 6);
  const rows = await readParquet(out);
  assert.equal(rows.length, 3);
  assert.deepEqual(rows[1].prompt, [{ role: "user", content: "7*8=" }]);
  assert.deepEqual(rows[2].extra_info, { index: 2 });
  for (const r of rows) {
    const resp = r.responses as string[];
    assert.equal(resp.length, 2);
    for (const s of resp) assert.ok(typeof s === "string" && s.length <= 6);
  }
  // Greedy is deterministic run to run.
  const args = [
    `model.path=${dir}/model`,
    `data.path=${dir}/prompts.parquet`,
    "rollout.do_sample=false",
  ];
  await main([...args, `data.output_path=${dir}/g1.parquet`, "rollout.response_length=4"], quiet);
  await main([...args, `data.output_path=${dir}/g2.parquet`, "rollout.response_length=4"], quiet);
  const [g1, g2] = [await readParquet(`${dir}/g1.parquet`), await readParquet(`${dir}/g2.parquet`)];
  assert.deepEqual(g1.map((r) => r.responses), g2.map((r) => r.responses));
  await Deno.remove(dir, { recursive: true });
});

gpuTest("generate fails clearly on a missing model folder or prompt column", async () => {
  const dir = await fixture();
  await assert.rejects(
    () => main([`model.path=${dir}/nope`, `data.path=${dir}/prompts.parquet`], quiet),
    /nope/,
  );
  await Deno.mkdir(`${dir}/empty`);
  await assert.rejects(
    () => main([`model.path=${dir}/empty`, `data.path=${dir}/prompts.parquet`], quiet),
    /model\.path=.*empty: missing .*config\.json/,
  );
  await assert.rejects(
    () =>
      main([
        `model.path=${dir}/model`,
        `data.path=${dir}/prompts.parquet`,
        "data.prompt_key=question",
      ], quiet),
    /missing column.*question|question.*missing column/,
  );
  await Deno.remove(dir, { recursive: true });
});
