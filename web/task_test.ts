// Prompt files picked in the page: parquet and JSONL of verl rows, the held-out split, errors that
// name the file and line, and the rewarded answer each built-in scorer accepts for the example.
import assert from "node:assert/strict";
import { charTokenizer, loadTokenizer } from "../src/io/mod.ts";
import { generateArithmetic, writeParquet } from "../src/data/mod.ts";
import { calcToolRows, describeRows, promptItems, readPromptFile } from "./task.ts";

const rows = generateArithmetic({ digits: 1, operands: 2, count: 25, seed: 3 });

async function parquetFile(): Promise<File> {
  const path = await Deno.makeTempFile({ suffix: ".parquet" });
  try {
    await writeParquet(path, { rows });
    return new File([await Deno.readFile(path)], "p.parquet");
  } finally {
    await Deno.remove(path);
  }
}

Deno.test("parquet and JSONL give the same rows; the last tenth is held out", async () => {
  const jsonl = new File([rows.map((r) => JSON.stringify(r)).join("\n") + "\n"], "p.jsonl");
  const a = await readPromptFile({ path: "p.parquet", file: await parquetFile() });
  const b = await readPromptFile({ path: "p.jsonl", file: jsonl });
  assert.equal(a.train.length, 23);
  assert.equal(a.val.length, 2);
  assert.deepEqual(a.val.map((r) => r.reward_model), rows.slice(23).map((r) => r.reward_model));
  assert.deepEqual(b.train.map((r) => r.prompt), a.train.map((r) => r.prompt));
  const one = await readPromptFile({
    path: "one.jsonl",
    file: new File([JSON.stringify(rows[0])], "x"),
  });
  assert.equal(one.train.length, 1);
  assert.equal(one.val.length, 1);
});

Deno.test("bad prompt files are errors naming the file, the line or the row", async () => {
  const bad = new File([JSON.stringify(rows[0]) + "\n{oops\n"], "bad.jsonl");
  await assert.rejects(readPromptFile({ path: "bad.jsonl", file: bad }), /bad\.jsonl: line 2/);
  await assert.rejects(
    readPromptFile({ path: "rows.csv", file: new File(["a,b"], "rows.csv") }),
    /rows\.csv: expected a \.parquet, \.jsonl or \.json file/,
  );
  const noTruth = { ...rows[1], reward_model: { style: "rule" } };
  const f = new File([[rows[0], noTruth].map((r) => JSON.stringify(r)).join("\n")], "g.jsonl");
  const split = await readPromptFile({ path: "g.jsonl", file: f });
  assert.throws(() => promptItems(split, charTokenizer()), /g\.jsonl, row 1, column "reward_model/);
});

Deno.test("the example's rewarded answer is what each built-in scorer really accepts", async () => {
  const split = await readPromptFile({ path: "p.parquet", file: await parquetFile() });
  const info = describeRows(split, charTokenizer(), true);
  const gt = info.example.groundTruth;
  assert.equal(gt, String((rows[23].reward_model as { ground_truth: string }).ground_truth));
  assert.match(info.example.prompt, /\d[+\-*]\d=/);
  assert.equal(info.rewarded.arithmetic, `#### ${gt}`);
  assert.equal(info.rewarded.gsm8k, `#### ${gt}`);
  assert.equal(info.rewarded.auto, `#### ${gt}`);
  assert.equal(info.rewarded.math, `\\boxed{${gt}}`);
  assert.equal(info.rewarded.exact_match, gt);
  assert.deepEqual(info.dataSources, ["synthetic/arithmetic"]);
  const other = { ...split, val: split.val.map((r) => ({ ...r, data_source: "my/own" })) };
  assert.equal(describeRows(other, charTokenizer(), false).rewarded.auto, null);
});

Deno.test("the calculator task shows a rewarded conversation as its model's template renders it", async () => {
  const tokenizer = await loadTokenizer(new URL("../assets/tiny_calc", import.meta.url).pathname);
  const rows = calcToolRows({ seed: 1, valPrompts: 3 });
  assert.equal(rows.train.length, 2000);
  assert.equal(rows.val.length, 3);
  const info = describeRows(rows, tokenizer, false);
  const expr = (rows.val[0].extra_info as { expression: string }).expression;
  const gt = info.example.groundTruth;
  const [a, b] = expr.split("*").map(Number);
  assert.equal(gt, String(a * b));
  assert.equal(info.rewarded.auto, `#### ${gt}`);
  assert.deepEqual(info.conversation, [
    { role: "user", content: `${expr}=` },
    {
      role: "assistant",
      content:
        `<tool_call>{"name": "calculator", "arguments": {"expression": "${expr}"}}</tool_call>`,
    },
    { role: "tool", content: gt },
    { role: "assistant", content: `#### ${gt}` },
  ]);
});
