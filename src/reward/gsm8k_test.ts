/**
 * verl's gsm8k rule on tricky strings. Each expected value is derived by hand from verl's code:
 * strict = findall("#### (\-?[0-9\.\,]+)") on the last 300 characters, last match, commas
 * removed; flexible = findall("(\-?[0-9\.\,]+)"), the last match not in ["", "."], else (Python's
 * loop variable after a loop without break) the first match; score compares strings exactly.
 */
import assert from "node:assert/strict";
import { extractGsm8kAnswer, gsm8kScore } from "./gsm8k.ts";

const pad = (n: number) => "x".repeat(n);

// [response, strict answer, flexible answer, why]
const CASES: [string, string | null, string | null, string][] = [
  ["so the total is 18\n#### 18", "18", "18", "plain answer; flexible's last run is 18 too"],
  ["#### -7", "-7", "-7", "an optional minus belongs to the number"],
  ["#### 3.75", "3.75", "3.75", "decimals are digits and dots"],
  ["#### 1,234,567", "1234567", "1,234,567", "strict drops commas; flexible keeps them"],
  ["#### $45", null, "45", "strict: `$` may not follow `#### `; flexible: the run after it"],
  ["#### 45$", "45", "45", "a `$` after the number ends the run"],
  ["The cost is $1,000.50", null, "1,000.50", "no ####; flexible: `$` is not in the run"],
  ["#### 5\nwait, recheck\n#### 6", "6", "6", "the last #### wins"],
  ["####7", null, "7", "strict needs the space after ####"],
  ["####  7", null, "7", "strict: a second space is not a digit"],
  ["#### 18.", "18.", "18.", "the sentence's period is part of the run in both modes"],
  ["The answer is 42.", null, "42.", "flexible keeps the trailing period"],
  ["so 5, right", null, "5,", "a trailing comma stays in flexible's run"],
  ["I owe -3 dollars, so -3.", null, "-3.", "runs: -3, ',', -3. -> the last"],
  ["#### --5", null, "-5", "strict: `-?` then digits fails on `--5`; flexible finds -5"],
  ["#### .", ".", ".", "strict does not filter '.'; flexible: only run is '.', kept"],
  ["#### ,", "", ",", "strict: ',' minus commas is '' (not None); flexible: ',' is valid"],
  ["ends with a dot .", null, ".", "flexible: every run is '.', the loop leaves the first run"],
  ["no digits here", null, null, "nothing matches"],
  ["", null, null, "empty response"],
  ["step 1: 12.5.3 apples", null, "12.5.3", "a run of digits and dots, however odd"],
  [`#### 99 ${pad(300)}`, null, null, "the #### answer lies before the last 300 characters"],
  [`#### 99 ${pad(300)} #### 100`, "100", "100", "only the tail's #### counts"],
  [
    `${pad(400)} total 12 apples and 3 pears.`,
    null,
    "3",
    "runs 12, 3, '.': the lone '.' is skipped",
  ],
  [`#### 7${pad(294)}`, "7", "7", "6 + 294 = 300 characters: '#### 7' is just inside"],
  [
    `#### 77${pad(294)}`,
    null,
    "77",
    "301 characters: the clip cuts the first '#'; no strict match",
  ],
  [`#### 7 ${"😀".repeat(293)}`, "7", "7", "300 code points (593 UTF-16 units): not clipped"],
  [`#### 3${"😀".repeat(295)}`, null, "3", "301 code points: '#' is cut; flexible still finds 3"],
];

for (const [text, strict, flexible, why] of CASES) {
  Deno.test(`gsm8k ${JSON.stringify(text.length > 30 ? text.slice(0, 14) + "…" : text)}: ${why}`, () => {
    assert.equal(extractGsm8kAnswer(text, "strict"), strict, "strict");
    assert.equal(extractGsm8kAnswer(text, "flexible"), flexible, "flexible");
  });
}

Deno.test("gsm8k score: exact string compare, format_score for a wrong or malformed answer", () => {
  assert.equal(gsm8kScore("#### 1,000", "1000"), 1.0); // commas removed -> "1000"
  assert.equal(gsm8kScore("#### 1000.0", "1000"), 0.0); // "1000.0" != "1000": no parsing
  assert.equal(gsm8kScore("#### 12", "13", { formatScore: 0.1 }), 0.1);
  assert.equal(gsm8kScore("#### $12", "12", { formatScore: 0.1 }), 0); // strict: no answer
  assert.equal(gsm8kScore("#### 12", "12", { score: 2 }), 2);
  assert.equal(gsm8kScore("#### 12", " 12"), 0); // the ground truth is not trimmed
  assert.equal(gsm8kScore("it is 12", "12", { method: "flexible" }), 1.0);
  assert.equal(gsm8kScore("it is 12.", "12", { method: "flexible", formatScore: 0.1 }), 0.1);
  assert.equal(gsm8kScore("a dot .", "12", { method: "flexible", formatScore: 0.1 }), 0.1);
  assert.equal(gsm8kScore("it is 12", "12"), 0); // strict without ####: no answer
});
