// Parquet files written by pyarrow 25 and pandas 3 themselves (test/pyarrow_written.py, on the GPU
// machine) in verl's RL schema: snappy, zstd, gzip, uncompressed format 1.0 without dictionaries,
// one row per row group, data pages v2, large_string columns, and pandas' to_parquet (what verl's
// preprocess scripts call). Each reads back to the same rows, and RLDataset builds its prompts.
import assert from "node:assert/strict";
import { readParquet, RLDataset } from "../src/data/mod.ts";
import { charTokenizer } from "../src/io/mod.ts";

const DIR = new URL("./fixtures/pyarrow_written", import.meta.url).pathname;
const expected = JSON.parse(Deno.readTextFileSync(`${DIR}/expected.json`));

for (const name of Object.keys(expected.files)) {
  Deno.test(`pyarrow-written parquet reads back: ${name} (${expected.files[name]})`, async () => {
    const rows = await readParquet(`${DIR}/${name}.parquet`);
    assert.deepEqual(rows.map(comparable), expected.rows.map(comparable));
    const ds = await RLDataset.load(`${DIR}/${name}.parquet`, charTokenizer(), {
      maxPromptLength: 4096,
      truncation: "error",
    });
    assert.equal(ds.items.length, 3);
    assert.deepEqual(ds.items.map((it) => it.groundTruth), ["72", "10", "\\frac{5}{6}"]);
    assert.deepEqual(ds.items.map((it) => it.dataSource), [
      "openai/gsm8k",
      "openai/gsm8k",
      "lighteval/MATH",
    ]);
  });
}

/** Integers may come back as bigint from int64 columns; compare them as numbers. */
function comparable(v: unknown): unknown {
  if (typeof v === "bigint") return Number(v);
  if (Array.isArray(v)) return v.map(comparable);
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, comparable(x)]));
  }
  return v;
}
