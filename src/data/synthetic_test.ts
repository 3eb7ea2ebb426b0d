import assert from "node:assert/strict";
import { defaultComputeScore } from "../reward/mod.ts";
import { RLDataset } from "./dataset.ts";
import { writeParquet } from "./parquet.ts";
import { evaluateExpression, generateArithmetic } from "./synthetic.ts";
import { charTokenizer } from "../io/mod.ts";

Deno.test("arithmetic rows follow verl's schema and score with the built-in scorer", async () => {
  const rows = generateArithmetic({ count: 50, digits: 2, seed: 4, operators: ["+", "-", "*"] });
  assert.equal(new Set(rows.map((r) => (r.prompt as { content: string }[])[0].content)).size, 50);
  const r = rows[0] as {
    prompt: { content: string }[];
    reward_model: { ground_truth: string };
    extra_info: { answer: string };
    data_source: string;
  };
  assert.match(r.prompt[0].content, /^\d+[-+*]\d+=$/);
  assert.equal(
    defaultComputeScore(r.data_source, r.extra_info.answer, r.reward_model.ground_truth),
    1,
  );
  assert.equal(evaluateExpression([2, 3, 4], ["+", "*"]), 14);
  assert.equal(evaluateExpression([2, 3, 4], ["-", "-"]), -5);
  const val = generateArithmetic({
    count: 20,
    seed: 5,
    exclude: new Set(rows.map((x) => (x.extra_info as { expression: string }).expression)),
  });
  assert.ok(
    val.every((v) =>
      !rows.some((t) =>
        (t.extra_info as { expression: string }).expression ===
          (v.extra_info as { expression: string }).expression
      )
    ),
  );
  const path = await Deno.makeTempFile({ suffix: ".parquet" });
  await writeParquet(path, { rows });
  const ds = await RLDataset.load(path, charTokenizer(), { maxPromptLength: 32 });
  assert.equal(ds.length, 50);
  assert.deepEqual(
    generateArithmetic({ count: 5, seed: 4 }),
    generateArithmetic({ count: 5, seed: 4 }),
  );
  assert.throws(() => generateArithmetic({ count: 500, digits: 1 }), /distinct problems/);
  await Deno.remove(path);
});
