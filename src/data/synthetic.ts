/**
 * The synthetic arithmetic task, small enough for a tiny character-level model to learn in
 * minutes. Prompt: `12+7=` (one user message). Expected response: `#### 19` (then EOS); the
 * `synthetic/arithmetic` scorer reads it with gsm8k's strict `#### <number>` rule.
 */
import { ARITHMETIC_DATA_SOURCE } from "../reward/mod.ts";
import { randInt } from "../tensor/mod.ts";
import { distinctRows } from "./distinct.ts";
import type { Row } from "./parquet.ts";

/** Operators the generator can use. */
export type Operator = "+" | "-" | "*";

export interface ArithmeticOptions {
  count: number;
  /** Most digits per operand (operands are uniform in [0, 10^digits)). */
  digits?: number;
  /** Most digits of the operands after the first (default: `digits`); 1 makes `47+8` problems. */
  otherDigits?: number;
  /** Operands per problem (>= 2). */
  operands?: number;
  operators?: Operator[];
  seed?: number;
  /**
   * Share of rows whose `extra_info.sft_answer` is the bare number instead of `#### n` (SFT data
   * with an inconsistent answer format; the scorer only accepts `#### n`). Default 0.
   */
  plainRatio?: number;
  /** Written to extra_info.split. */
  split?: string;
  /** Expressions to avoid (e.g. the training set's, when making the validation set). */
  exclude?: Set<string>;
}

/** The value of an expression with the usual precedence (* before + and -). */
export function evaluateExpression(nums: number[], ops: Operator[]): number {
  const terms = [nums[0]];
  const signs: number[] = [1];
  ops.forEach((op, i) => {
    if (op === "*") terms[terms.length - 1] *= nums[i + 1];
    else {
      terms.push(nums[i + 1]);
      signs.push(op === "+" ? 1 : -1);
    }
  });
  return terms.reduce((acc, t, i) => acc + signs[i] * t, 0);
}

/** Generates verl rows for the arithmetic task. */
export function generateArithmetic(o: ArithmeticOptions): Row[] {
  const digits = o.digits ?? 2;
  const nOperands = o.operands ?? 2;
  const operators = o.operators ?? ["+", "-"];
  if (!Number.isInteger(digits) || digits < 1 || digits > 7) {
    throw new Error(`digits must be an integer in [1, 7], got ${digits}`);
  }
  if (!Number.isInteger(nOperands) || nOperands < 2) {
    throw new Error(`operands must be an integer >= 2, got ${nOperands}`);
  }
  if (operators.length === 0 || operators.some((op) => !["+", "-", "*"].includes(op))) {
    throw new Error(`operators must be drawn from + - *, got ${operators.join(" ")}`);
  }
  const other = o.otherDigits ?? digits;
  if (!Number.isInteger(other) || other < 1 || other > 7) {
    throw new Error(`otherDigits must be an integer in [1, 7], got ${other}`);
  }
  const space = Math.pow(10, digits + other * (nOperands - 1)) *
    Math.pow(operators.length, nOperands - 1);
  return distinctRows({ count: o.count, space, seed: o.seed, exclude: o.exclude }, (rand) => {
    const nums = Array.from(
      { length: nOperands },
      (_, i) => randInt(rand, 0, 10 ** (i === 0 ? digits : other) - 1),
    );
    const ops = Array.from(
      { length: nOperands - 1 },
      () => operators[randInt(rand, 0, operators.length - 1)],
    );
    const key = nums.map((n, i) => (i ? ops[i - 1] : "") + n).join("");
    return { key, problem: { nums, ops } };
  }, ({ nums, ops }, expr, index, rand) => {
    const answer = String(evaluateExpression(nums, ops));
    return {
      data_source: ARITHMETIC_DATA_SOURCE,
      prompt: [{ role: "user", content: `${expr}=` }],
      ability: "math",
      reward_model: { style: "rule", ground_truth: answer },
      extra_info: {
        split: o.split ?? "train",
        index,
        a: nums[0],
        b: nums[1],
        op: ops[0],
        expression: expr,
        answer: `#### ${answer}`,
        sft_answer: rand() < (o.plainRatio ?? 0) ? answer : `#### ${answer}`,
      },
    };
  });
}
