import assert from "node:assert/strict";
import { charTokenizerTexts } from "../io/mod.ts";
import { writeModelFolder } from "../io/mod.ts";
import { floatTensor } from "../io/mod.ts";
import { tinyModelConfig, tinyWeights, weightShapes } from "../nn/mod.ts";
import { gpuTest } from "../testing/mod.ts";
import { readParquet, writeParquet } from "../data/mod.ts";
import { charTokenizer } from "../io/mod.ts";
import { ConfigError } from "../config/mod.ts";
import { existsSync } from "node:fs";
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

gpuTest(
  "generate: an output path that is a folder or cannot be made fails before generating",
  async () => {
    const dir = await fixture();
    await Deno.mkdir(`${dir}/outdir`);
    const lines: string[] = [];
    const args = [`model.path=${dir}/model`, `data.path=${dir}/prompts.parquet`];
    await assert.rejects(
      () => main([...args, `data.output_path=${dir}/outdir`], { print: (l) => lines.push(l) }),
      (e: Error) => {
        assert.ok(e instanceof ConfigError);
        assert.equal(e.key, "data.output_path");
        assert.match(e.message, new RegExp(`^data\\.output_path=${dir}/outdir: is a folder`));
        return true;
      },
    );
    await assert.rejects(
      () => main([...args, `data.output_path=${dir}/prompts.parquet/gen.parquet`], quiet),
      /data\.output_path=.*prompts\.parquet\/gen\.parquet: cannot create its folder/,
    );
    assert.ok(!lines.some((l) => l.startsWith("generated")), "nothing may be generated");
    // No temp or probe file is left anywhere.
    const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    assert.deepEqual(names, ["model", "outdir", "prompts.parquet"]);
    assert.deepEqual([...Deno.readDirSync(`${dir}/outdir`)], []);
    await Deno.remove(dir, { recursive: true });
  },
);

gpuTest(
  "generate: a prompt plus response past max_position_embeddings names the numbers",
  async () => {
    const dir = await fixture();
    await assert.rejects(
      () =>
        main([
          `model.path=${dir}/model`,
          `data.path=${dir}/prompts.parquet`,
          `data.output_path=${dir}/gen.parquet`,
          "rollout.response_length=60",
        ], quiet),
      new RegExp(
        "the longest prompt \\(8 tokens, row 2 of .*prompts\\.parquet\\) \\+ " +
          "rollout\\.response_length=60 = 68 tokens is more than the model's " +
          `max_position_embeddings=64 \\(${dir}/model/config\\.json\\): set ` +
          "rollout\\.response_length=56 or less",
      ),
    );
    assert.ok(!existsSync(`${dir}/gen.parquet`));
    await Deno.remove(dir, { recursive: true });
  },
);

gpuTest("generate: truncation says what it cut; temperature=0 decodes greedily", async () => {
  const dir = await fixture();
  const args = [
    `model.path=${dir}/model`,
    `data.path=${dir}/prompts.parquet`,
    "rollout.response_length=4",
    "data.max_prompt_length=7",
    "data.truncation=left",
  ];
  const lines: string[] = [];
  await main([...args, `data.output_path=${dir}/t0.parquet`, "rollout.temperature=0"], {
    print: (l) => lines.push(l),
  });
  assert.ok(
    lines.includes(
      `data.truncation=left: cut 1 of 3 prompts of ${dir}/prompts.parquet to ` +
        "data.max_prompt_length=7 tokens (the longest was 8)",
    ),
    lines.join("\n"),
  );
  await main([...args, `data.output_path=${dir}/g.parquet`, "rollout.do_sample=false"], quiet);
  const [t0, g] = [await readParquet(`${dir}/t0.parquet`), await readParquet(`${dir}/g.parquet`)];
  assert.deepEqual(t0.map((r) => r.responses), g.map((r) => r.responses));
  await Deno.remove(dir, { recursive: true });
});

gpuTest(
  "generate: a KV budget of about one sequence and max_num_seqs give the same greedy responses",
  async () => {
    const dir = await fixture();
    const args = [
      `model.path=${dir}/model`,
      `data.path=${dir}/prompts.parquet`,
      "rollout.response_length=20",
      "rollout.do_sample=false",
    ];
    let one = 0;
    await assert.rejects(
      main([...args, `data.output_path=${dir}/x.parquet`, "rollout.kv_cache_tokens=1"], quiet),
      (e: Error) => {
        assert.ok(e instanceof ConfigError && e.key === "rollout.kv_cache_tokens", e.message);
        one = Number(/response_length is (\d+) positions/.exec(e.message)?.[1]);
        return true;
      },
    );
    assert.ok(one > 20, `one sequence takes ${one} positions`);
    await main([...args, `data.output_path=${dir}/a.parquet`], quiet);
    await main([
      ...args,
      `data.output_path=${dir}/b.parquet`,
      `rollout.kv_cache_tokens=${one + 8}`,
      "rollout.max_num_seqs=2",
    ], quiet);
    const [a, b] = [await readParquet(`${dir}/a.parquet`), await readParquet(`${dir}/b.parquet`)];
    assert.deepEqual(b.map((r) => r.responses), a.map((r) => r.responses));
    await Deno.remove(dir, { recursive: true });
  },
);
