import assert from "node:assert/strict";
import { calculate, CalculatorError } from "./calculator.ts";

Deno.test("calculator: decimals are exact", () => {
  assert.equal(calculate("0.1 + 0.2"), "0.3");
  assert.equal(calculate("1.10 * 3"), "3.3");
  assert.equal(calculate("19.99 * 3 - 0.97"), "59");
  assert.equal(calculate("7 / 4"), "1.75");
  assert.equal(calculate("-1 / 8"), "-0.125");
  assert.equal(calculate("0.05 - 1"), "-0.95");
  assert.equal(calculate(".5 + 2."), "2.5");
});

Deno.test("calculator: non-terminating quotients are reduced fractions", () => {
  assert.equal(calculate("1 / 3"), "1/3");
  assert.equal(calculate("10 / 6"), "5/3");
  assert.equal(calculate("-2 / 6"), "-1/3");
});

Deno.test("calculator: precedence, associativity, unary minus, powers", () => {
  assert.equal(calculate("2 + 3 * 4"), "14");
  assert.equal(calculate("(2 + 3) * 4"), "20");
  assert.equal(calculate("10 - 4 - 3"), "3");
  assert.equal(calculate("64 / 4 / 2"), "8");
  assert.equal(calculate("2 ^ 3 ^ 2"), "512");
  assert.equal(calculate("2 ** 10"), "1024");
  assert.equal(calculate("-2 ^ 2"), "-4");
  assert.equal(calculate("(-2) ^ 2"), "4");
  assert.equal(calculate("2 ^ -2"), "0.25");
  assert.equal(calculate("--3 + -(-1)"), "4");
  assert.equal(calculate("17 % 5 + -7 % 3"), "1");
  assert.equal(calculate("2 ^ 100"), (2n ** 100n).toString());
  assert.equal(calculate("123456789012345678901234567890 + 1"), "123456789012345678901234567891");
});

Deno.test("calculator: errors name the problem and never evaluate code", () => {
  const fails = (expr: string, why: RegExp) =>
    assert.throws(
      () => calculate(expr),
      (e: unknown) => e instanceof CalculatorError && why.test(e.message),
    );
  fails("1 / 0", /division by zero/);
  fails("1 / (2 - 2)", /division by zero/);
  fails("5 % 0", /modulo by zero/);
  fails("2 ^ 0.5", /integer exponents/);
  fails("(1 + 2", /missing "\)"/);
  fails("1 +", /end of input/);
  fails("1 2", /unexpected "2"/);
  fails("Math.max(1)", /unexpected "M"/);
  fails("alert(1)", /unexpected "a"/);
  fails("", /end of input/);
});
