// An empty data file is an error naming it; dropped and cut prompts are counted per file.
import assert from "node:assert/strict";
import { RLDataset } from "./dataset.ts";
import { loadSftExamples } from "./sft_data.ts";
import { DataError } from "./errors.ts";
import { writeParquet } from "./parquet.ts";
import { charTokenizer } from "../io/mod.ts";

const tok = charTokenizer();

const row = (content: string) => ({
  data_source: "s",
  prompt: [{ role: "user", content }],
  reward_model: { style: "rule", ground_truth: "1" },
});

// "<|user|>" + content + "<eos><|assistant|>" = content.length + 3 tokens.
async function file(contents: string[]): Promise<string> {
  const path = await Deno.makeTempFile({ suffix: ".parquet" });
  await writeParquet(path, { rows: contents.map(row) });
  return path;
}

Deno.test("an empty train or validation parquet is an error naming the file", async () => {
  const empty = await Deno.makeTempFile({ suffix: ".parquet" });
  await writeParquet(empty, {
    columns: { data_source: [], prompt: [], reward_model: [] },
  });
  const good = await file(["ab"]);
  const sft = {
    promptKey: "prompt",
    responseKey: "data_source",
    promptDictKeys: [],
    responseDictKeys: [],
    maxLength: 32,
    truncation: "error" as const,
  };
  await assert.rejects(
    () => loadSftExamples([good, empty], tok, sft),
    new RegExp(`${empty}: the file has no rows`),
  );
  await assert.rejects(
    () => RLDataset.load([good, empty], tok, { maxPromptLength: 8, log: () => {} }),
    (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.equal(e.file, empty);
      assert.match(e.message, new RegExp(`^${empty}: the file has no rows`));
      assert.match(e.message, /data\.train_files and data\.val_files/);
      return true;
    },
  );
  await Deno.remove(empty);
  await Deno.remove(good);
});

Deno.test("filter_overlong_prompts prints how many it dropped, per file", async () => {
  const a = await file(["ab", "0123456789", "xy"]); // 5, 13, 5 tokens
  const b = await file(["cd"]);
  const lines: string[] = [];
  const ds = await RLDataset.load([a, b], tok, {
    maxPromptLength: 8,
    filterOverlongPrompts: true,
    log: (l) => lines.push(l),
  });
  assert.equal(ds.length, 3);
  assert.deepEqual(lines, [
    `data.filter_overlong_prompts: dropped 1 of 3 prompts of ${a} (longer than ` +
    "data.max_prompt_length=8 tokens; the longest is 13)",
    `data.filter_overlong_prompts: dropped 0 of 1 prompts of ${b} (longer than ` +
    "data.max_prompt_length=8 tokens)",
  ]);
  // Dropping every prompt of a file leaves it empty: an error naming it and the shortest prompt.
  await assert.rejects(
    () => RLDataset.load(a, tok, { maxPromptLength: 4, filterOverlongPrompts: true }),
    new RegExp(`${a}: data.filter_overlong_prompts=true dropped all 3 prompts.*shortest is 5`),
  );
  await Deno.remove(a);
  await Deno.remove(b);
});

Deno.test("truncation prints how many prompts it cut; right truncation of all warns", async () => {
  const path = await file(["ab", "0123456789", "xy"]);
  for (const truncation of ["left", "middle", "right"] as const) {
    const lines: string[] = [];
    await RLDataset.load(path, tok, { maxPromptLength: 8, truncation, log: (l) => lines.push(l) });
    assert.deepEqual(lines, [
      `data.truncation=${truncation}: cut 1 of 3 prompts of ${path} to ` +
      "data.max_prompt_length=8 tokens (the longest was 13)",
    ]);
  }
  const lines: string[] = [];
  const ds = await RLDataset.load(path, tok, {
    maxPromptLength: 3,
    truncation: "right",
    log: (l) => lines.push(l),
  });
  assert.equal(tok.decode(ds.items[0].inputIds), "<|user|>ab");
  assert.equal(lines.length, 2);
  assert.match(lines[0], /cut 3 of 3 prompts/);
  assert.match(
    lines[1],
    new RegExp(
      `^warning: data.truncation=right cut every prompt of ${path}: each keeps only its first 3 ` +
        'tokens, the start of the chat template \\("<\\|user\\|>ab"\\), so the question and the ' +
        "generation prompt are lost; raise data.max_prompt_length or use data.truncation=left",
    ),
  );
  // Prompts within the budget print nothing.
  const quiet: string[] = [];
  await RLDataset.load(path, tok, {
    maxPromptLength: 32,
    truncation: "left",
    log: (l) => quiet.push(l),
  });
  assert.deepEqual(quiet, []);
  await Deno.remove(path);
});

Deno.test("writeParquet into a folder fails naming it and leaves no temp file", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/out.parquet`);
  await assert.rejects(
    () => writeParquet(`${dir}/out.parquet`, { rows: [row("a")] }),
    new RegExp(`cannot write ${dir}/out\\.parquet: it is a folder`),
  );
  assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["out.parquet"]);
  assert.deepEqual([...Deno.readDirSync(`${dir}/out.parquet`)], []);
  await Deno.remove(dir, { recursive: true });
});
