import assert from "node:assert/strict";
import { extractGsm8kAnswer, gsm8kScore } from "./gsm8k.ts";

const pad = "x".repeat(400);

// [response, strict answer, flexible answer]
const CASES: [string, string | null, string | null][] = [
  ["so the total is 18\n#### 18", "18", "18"],
  ["#### -7", "-7", "-7"],
  ["#### 3.75", "3.75", "3.75"],
  ["#### 1,234,567", "1234567", "1234567"],
  ["#### $12", "12", "12"],
  ["#### $1,000.50", "1000.50", "1000.50"],
  ["#### 5\nwait, recheck\n#### 6", "6", "6"],
  ["####7", null, "7"],
  ["The answer is 42.", null, "42"],
  ["I owe -3 dollars, so -3.", null, "-3"],
  ["no digits here", null, null],
  ["ends with a dot .", null, null],
  ["", null, null],
  [`#### 99 ${pad}`, null, null],
  [`#### 99 ${pad} #### 100`, "100", "100"],
  [`${pad} total 12 apples and 3 pears.`, null, "3"],
];

Deno.test("gsm8k extraction, strict and flexible", () => {
  for (const [text, strict, flexible] of CASES) {
    assert.equal(extractGsm8kAnswer(text, "strict"), strict, `strict: ${text.slice(-40)}`);
    assert.equal(extractGsm8kAnswer(text, "flexible"), flexible, `flexible: ${text.slice(-40)}`);
  }
});

Deno.test("gsm8k score: exact string match, format score, no answer", () => {
  assert.equal(gsm8kScore("#### 1,000", "1000"), 1.0);
  assert.equal(gsm8kScore("#### 1000.0", "1000"), 0.0);
  assert.equal(gsm8kScore("#### 12", "13", { formatScore: 0.1 }), 0.1);
  assert.equal(gsm8kScore("twelve", "12", { formatScore: 0.1 }), 0);
  assert.equal(gsm8kScore("#### 12", "12", { score: 2 }), 2);
  assert.equal(gsm8kScore("it is 12", "12", { method: "flexible" }), 1.0);
  assert.equal(gsm8kScore("it is 12", "12"), 0);
});
