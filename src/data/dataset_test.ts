import assert from "node:assert/strict";
import { collatePrompts } from "./collate.ts";
import { RLDataset } from "./dataset.ts";
import { DataError } from "./errors.ts";
import { writeParquet } from "./parquet.ts";
import { charTokenizer } from "../io/mod.ts";

const tok = charTokenizer();

const row = (content: string) => ({
  data_source: "s",
  prompt: [{ role: "user", content }],
  reward_model: { style: "rule", ground_truth: "1" },
  extra_info: { index: 0 },
});

// "<|user|>" + content + "<eos><|assistant|>" = content.length + 3 tokens.
async function fixture(): Promise<string> {
  const path = await Deno.makeTempFile({ suffix: ".parquet" });
  await writeParquet(path, { rows: [row("ab"), row("0123456789"), row("xy")] });
  return path;
}

Deno.test("overlong prompts: error names file, row and lengths", async () => {
  const path = await fixture();
  await assert.rejects(() => RLDataset.load(path, tok, { maxPromptLength: 8 }), (e) => {
    assert.ok(e instanceof DataError);
    assert.equal(e.row, 1);
    assert.equal(e.column, "prompt");
    assert.match(
      e.message,
      new RegExp(`${path}, row 1, column "prompt": prompt is 13 tokens.*max_prompt_length=8`),
    );
    return true;
  });
  await Deno.remove(path);
});

Deno.test("overlong prompts: left, right, middle truncation and filtering", async () => {
  const path = await fixture();
  const text = (truncation: "left" | "right" | "middle") =>
    RLDataset.load(path, tok, { maxPromptLength: 8, truncation, log: () => {} })
      .then((ds) => tok.decode(ds.items[1].inputIds));
  assert.equal(await text("left"), "456789<eos><|assistant|>");
  assert.equal(await text("right"), "<|user|>0123456");
  assert.equal(await text("middle"), "<|user|>01289<eos><|assistant|>");
  const filtered = await RLDataset.load(path, tok, {
    maxPromptLength: 8,
    filterOverlongPrompts: true,
    log: () => {},
  });
  assert.equal(filtered.length, 2);
  assert.equal(filtered.filtered, 1);
  assert.deepEqual(filtered.items.map((i) => [i.index, i.row, i.uid]), [[0, 0, "p0"], [
    1,
    2,
    "p1",
  ]]);
  await Deno.remove(path);
});

Deno.test("collate left-pads and derives position ids", () => {
  const t = collatePrompts([{ inputIds: [5, 6, 7] }, { inputIds: [8] }], { padTokenId: 0 });
  assert.equal(t.promptLength, 3);
  assert.deepEqual([...t.inputIds], [5, 6, 7, 0, 0, 8]);
  assert.deepEqual([...t.attentionMask], [1, 1, 1, 0, 0, 1]);
  assert.deepEqual([...t.positionIds], [0, 1, 2, 0, 0, 0]);
  const wide = collatePrompts([{ inputIds: [5, 6] }], { padTokenId: 9, length: 4 });
  assert.deepEqual([...wide.inputIds], [9, 9, 5, 6]);
  assert.deepEqual([...wide.positionIds], [0, 0, 0, 1]);
  assert.throws(() => collatePrompts([{ inputIds: [1, 2, 3] }], { padTokenId: 0, length: 2 }));
});
