import assert from "node:assert/strict";
import { exactMatchScore } from "./exact_match.ts";

// [response, ground truth, score]
const CASES: [string, string, number][] = [
  ["13", "13", 1],
  [" 13\n", "13", 1],
  ["13", " 13 ", 1],
  ["#### 13", "13", 0],
  ["13.", "13", 0],
  ["130", "13", 0],
  ["", "13", 0],
  ["", "", 1],
  ["new  york", "new york", 1],
  ["New York", "new york", 0],
];

Deno.test("exact match compares trimmed text with collapsed whitespace", () => {
  for (const [response, truth, want] of CASES) {
    assert.equal(exactMatchScore(response, truth), want, `${JSON.stringify(response)} vs ${truth}`);
  }
});

Deno.test("exact match options: ignoreCase and the score of a match", () => {
  assert.equal(exactMatchScore("New York", "new york", { ignoreCase: true }), 1);
  assert.equal(exactMatchScore("7", "7", { score: 0.5 }), 0.5);
  assert.equal(exactMatchScore("8", "7", { score: 0.5 }), 0);
});
