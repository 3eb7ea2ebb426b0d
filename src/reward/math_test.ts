import assert from "node:assert/strict";
import { lastBoxed, mathEquivalent, mathScore } from "./math.ts";

Deno.test("lastBoxed finds the last box with nested braces", () => {
  assert.equal(lastBoxed("\\boxed{1} then \\boxed{\\frac{1}{2}}"), "\\frac{1}{2}");
  assert.equal(lastBoxed("\\fbox{7}"), "7");
  assert.equal(lastBoxed("so $\\boxed 5$."), "5");
  assert.equal(lastBoxed("\\boxed{\\{1,2\\}}"), "\\{1,2\\}");
  assert.equal(lastBoxed("\\boxed{unclosed"), null);
  assert.equal(lastBoxed("no box"), null);
});

Deno.test("math answers normalise like verl's math reward", () => {
  const same: [string, string][] = [
    ["\\dfrac{1}{2}", "\\frac{1}{2}"],
    ["\\frac12", "\\frac{1}{2}"],
    ["0.5", "\\frac{1}{2}"],
    ["1/2", "\\frac{1}{2}"],
    ["\\left( 1, 2 \\right)", "(1,2)"],
    ["10\\text{ cm}", "10"],
    ["\\text{Monday}", "Monday"],
    ["$5$", "5"],
    ["5.", "5"],
    ["50\\%", "50"],
    ["x = 3", "3"],
    ["\\sqrt3", "\\sqrt{3}"],
    ["90^\\circ", "90"],
    ["1\\,000", "1000"],
    ["\\!\\!12", "12"],
    [".5", "0.5"],
  ];
  for (const [a, b] of same) assert.ok(mathEquivalent(a, b), `${a} == ${b}`);
  assert.ok(!mathEquivalent("0.5", "\\frac{1}{2}", { numericEquivalence: false }));
  assert.ok(!mathEquivalent("0.25", "\\frac{1}{2}"));
  assert.ok(!mathEquivalent("\\frac{2}{4}", "\\frac{1}{3}"));
  assert.ok(!mathEquivalent("x+1", "x+2"));
});

Deno.test("mathScore uses the last boxed answer", () => {
  assert.equal(mathScore("first \\boxed{3}, no: \\boxed{\\dfrac{3}{4}}", "\\frac{3}{4}"), 1.0);
  assert.equal(mathScore("\\boxed{4}", "\\boxed{4}"), 1.0);
  assert.equal(mathScore("the answer is 4", "4"), 0.0);
  assert.equal(mathScore("\\boxed{5}", "4"), 0.0);
});
