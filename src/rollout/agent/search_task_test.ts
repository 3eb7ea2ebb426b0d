import assert from "node:assert/strict";
import { generateSearchTask } from "../../data/mod.ts";
import { Bm25Index } from "./bm25.ts";

Deno.test("search task: searching a question finds the passage that answers it", () => {
  const s = generateSearchTask({ trainSize: 400, valSize: 50, seed: 1 });
  const index = new Bm25Index(s.corpus);
  let found = 0;
  const rows = [...s.train, ...s.val];
  for (const r of rows) {
    const question = (r.extra_info as { question: string }).question;
    const target = (r.reward_model as { ground_truth: { target: string[] } }).ground_truth.target;
    const [top] = index.search(question, 1);
    if (top && top.passage.contents.includes(` ${target[0]}.`)) found++;
  }
  // Made-up names may share a syllable word; the two words of a name pick the right passage.
  assert.ok(found / rows.length > 0.97, `${found} of ${rows.length} answered by the top passage`);
});
