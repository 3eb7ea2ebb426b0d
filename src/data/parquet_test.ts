import assert from "node:assert/strict";
import { parquetMetadata } from "hyparquet";
import { RLDataset } from "./dataset.ts";
import { DataError } from "./errors.ts";
import { readParquet, writeParquet } from "./parquet.ts";
import { charTokenizer } from "../io/mod.ts";
import { arrowTableToParquet, verlArrowTable } from "./testing.ts";

const tok = charTokenizer();

const ROWS = [
  {
    source: "openai/gsm8k",
    messages: [["system", "be brief"], ["user", "1+1?"]] as [string, string][],
    truth: "2",
    index: 0,
  },
  {
    source: "synthetic/arithmetic",
    messages: [["user", "3*4="]] as [string, string][],
    truth: "12",
    index: 7,
  },
];

function dataError(file: string, row: number | undefined, column: string | undefined, re?: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof DataError, `expected DataError, got ${e}`);
    assert.equal(e.file, file);
    assert.equal(e.row, row);
    assert.equal(e.column, column);
    assert.ok(e.message.includes(file));
    if (re) assert.match(e.message, re);
    return true;
  };
}

for (const codec of ["SNAPPY", "GZIP"] as const) {
  Deno.test(`reads a pyarrow-layout ${codec} file built from an Arrow table`, async () => {
    const path = await Deno.makeTempFile({ suffix: ".parquet" });
    const bytes = arrowTableToParquet(verlArrowTable(ROWS), codec);
    const meta = parquetMetadata(bytes.buffer as ArrayBuffer);
    assert.equal(meta.row_groups[0].columns[0].meta_data?.codec, codec);
    await Deno.writeFile(path, bytes);
    const rows = await readParquet(path);
    assert.deepEqual(rows[1], {
      data_source: "synthetic/arithmetic",
      prompt: [{ role: "user", content: "3*4=" }],
      ability: "math",
      reward_model: { style: "rule", ground_truth: "12" },
      extra_info: { split: "train", index: 7, ratio: 1.75 },
    });
    const ds = await RLDataset.load(path, tok, { maxPromptLength: 64 });
    assert.equal(ds.length, 2);
    const it = ds.items[0];
    assert.equal(
      tok.decode(it.inputIds),
      "<|system|>be brief<eos><|user|>1+1?<eos><|assistant|>",
    );
    assert.equal(it.dataSource, "openai/gsm8k");
    assert.equal(it.groundTruth, "2");
    assert.deepEqual(it.extraInfo, { split: "train", index: 0, ratio: 0 });
    assert.deepEqual(it.rawPrompt[1], { role: "user", content: "1+1?" });
    await Deno.remove(path);
  });
}

Deno.test("our writer round-trips nested rows", async () => {
  const path = await Deno.makeTempFile({ suffix: ".parquet" });
  const rows = [
    { a: "x", n: 1, f: 0.5, ok: true, l: ["r1", "r2"], s: { k: 1, t: "u" }, z: null },
    { a: null, n: 2, f: 2, ok: false, l: [], s: { k: 3, t: null }, z: null },
  ];
  await writeParquet(path, { rows });
  assert.deepEqual(await readParquet(path), rows);
  await writeParquet(path, { columns: { responses: [["a", "b"], ["c"]] } });
  assert.deepEqual(await readParquet(path), [{ responses: ["a", "b"] }, { responses: ["c"] }]);
  await Deno.remove(path);
});

Deno.test("missing columns, malformed rows and corrupt bytes name file, row and column", async () => {
  const dir = await Deno.makeTempDir();
  const noRm = `${dir}/no_rm.parquet`;
  await writeParquet(noRm, {
    rows: [{ data_source: "s", prompt: [{ role: "user", content: "q" }] }],
  });
  await assert.rejects(
    () => RLDataset.load(noRm, tok, { maxPromptLength: 8 }),
    dataError(noRm, undefined, "reward_model", /missing column/),
  );
  await assert.rejects(
    () => RLDataset.load(noRm, tok, { maxPromptLength: 8, promptKey: "messages" }),
    dataError(noRm, undefined, "messages"),
  );

  const good = {
    data_source: "s",
    prompt: [{ role: "user", content: "q" }],
    reward_model: { style: "rule", ground_truth: "1" },
  };
  const badPrompt = `${dir}/bad_prompt.parquet`;
  await writeParquet(badPrompt, {
    columns: {
      data_source: ["s", "s"],
      prompt: ['[{"role":"user"}]', "plain text"],
      reward_model: [good.reward_model, good.reward_model],
    },
  });
  await assert.rejects(
    () => RLDataset.load(badPrompt, tok, { maxPromptLength: 64 }),
    dataError(badPrompt, 0, "prompt", /list of \{role, content\}/),
  );
  const badTruth = `${dir}/bad_truth.parquet`;
  await writeParquet(badTruth, {
    rows: [good, { ...good, reward_model: { style: "rule", ground_truth: null } }],
  });
  await assert.rejects(
    () => RLDataset.load(badTruth, tok, { maxPromptLength: 64 }),
    dataError(badTruth, 1, "reward_model", /ground_truth/),
  );
  const badSource = `${dir}/bad_source.parquet`;
  await writeParquet(badSource, { rows: [good, good, { ...good, data_source: null }] });
  await assert.rejects(
    () => RLDataset.load(badSource, tok, { maxPromptLength: 64 }),
    dataError(badSource, 2, "data_source", /expected a string/),
  );

  const ok = `${dir}/ok.parquet`;
  await writeParquet(ok, { rows: Array.from({ length: 50 }, () => good) });
  const bytes = await Deno.readFile(ok);
  const truncated = `${dir}/truncated.parquet`;
  await Deno.writeFile(truncated, bytes.slice(0, bytes.length - 20));
  await assert.rejects(
    () => readParquet(truncated),
    dataError(truncated, undefined, undefined, /not a readable parquet/),
  );
  const garbage = `${dir}/garbage.parquet`;
  await Deno.writeFile(garbage, new TextEncoder().encode("PAR1 this is not parquet at all PAR1"));
  await assert.rejects(() => readParquet(garbage), dataError(garbage, undefined, undefined));
  // Damage the column data but keep the footer intact.
  const damaged = `${dir}/damaged.parquet`;
  const copy = bytes.slice();
  for (let i = 4; i < 60; i++) copy[i] = 0xff;
  await Deno.writeFile(damaged, copy);
  await assert.rejects(
    () => readParquet(damaged),
    dataError(damaged, undefined, undefined, /corrupt/),
  );
  await assert.rejects(
    () => readParquet(`${dir}/nope.parquet`),
    dataError(`${dir}/nope.parquet`, undefined, undefined, /cannot read/),
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a struct ground_truth (Search-R1's {target: [...]}) reaches the scorer as JSON", async () => {
  const { parseRLRow } = await import("./rows.ts");
  const r = parseRLRow(
    {
      data_source: "nq",
      prompt: [{ role: "user", content: "q" }],
      reward_model: { style: "rule", ground_truth: { target: ["Paris", "City of Light"] } },
    },
    { file: "f.parquet", row: 0 },
    { promptKey: "prompt", dataSourceKey: "data_source" },
  );
  assert.deepEqual(JSON.parse(r.groundTruth), { target: ["Paris", "City of Light"] });
});
