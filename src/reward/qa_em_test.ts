import assert from "node:assert/strict";
import { defaultComputeScore } from "./default_score.ts";
import { extractAnswer, goldenAnswers, normalizeAnswer, qaEmScore } from "./qa_em.ts";

Deno.test("normalize_answer: case, punctuation, articles, whitespace", () => {
  assert.equal(normalizeAnswer("  The Eiffel-Tower!  "), "eiffeltower");
  assert.equal(normalizeAnswer("A cat and an owl"), "cat and owl");
  assert.equal(normalizeAnswer("theater, anthem"), "theater anthem");
  assert.equal(normalizeAnswer("Ça the été"), "ça été");
  assert.equal(normalizeAnswer("U.S.A."), "usa");
});

Deno.test("golden answers: Search-R1's {target: [...]}, a list, or plain text", () => {
  assert.deepEqual(goldenAnswers('{"target": ["Paris", "City of Light"]}'), [
    "Paris",
    "City of Light",
  ]);
  assert.deepEqual(goldenAnswers('["a", "b"]'), ["a", "b"]);
  assert.deepEqual(goldenAnswers("Paris"), ["Paris"]);
  assert.deepEqual(goldenAnswers('{"target": "Rome"}'), ["Rome"]);
});

Deno.test("qa_em: the last answer tag, exact match over the golden list", () => {
  const gt = '{"target": ["Paris", "City of Light"]}';
  assert.equal(qaEmScore("<answer>x</answer> then <answer> the city of light </answer>", gt), 1);
  assert.equal(qaEmScore("<answer>Paris</answer><answer>Lyon</answer>", gt), 0);
  assert.equal(qaEmScore("Paris", gt), 0);
  assert.equal(qaEmScore("<answer>Lyon</answer>", gt, { formatScore: 0.1 }), 0.1);
  assert.equal(extractAnswer("<answer>\nmulti\nline\n</answer>"), "multi\nline");
  assert.equal(qaEmScore("<answer>Paris</answer>".repeat(11), gt), 0.25);
  assert.equal(defaultComputeScore("nq", "<answer>paris</answer>", gt), 1);
  assert.equal(defaultComputeScore("searchR1_hotpotqa", "<answer>Rome</answer>", gt), 0);
});
