/**
 * The calculator task (`deno task data --task calc_tool`): products of a multi-digit number by a
 * two-digit one (`347*86=` -> `#### 29842`), too hard for the tiny model to compute in its head
 * and exact with the `calculator` tool. RL rows carry verl's tool columns (`agent_name:
 * tool_agent`, `extra_info.tools_kwargs.calculator`); SFT rows are demonstration conversations in
 * verl's multi-turn layout: the assistant calls the calculator in hermes format, reads the reply
 * and answers `#### n`, or (a share `1 - toolRatio` of them) answers at once from its head, so
 * the fine-tuned model knows the call format but rarely uses it before RL.
 */
import { CALC_TOOL_DATA_SOURCE } from "../reward/mod.ts";
import { mulberry32, randInt } from "../tensor/mod.ts";
import { distinctRows } from "./distinct.ts";
import type { Row } from "./parquet.ts";

export interface CalcToolOptions {
  count: number;
  /** Digits of the first factor (the second has two and is not a multiple of 10). */
  digits?: number;
  seed?: number;
  split?: string;
  /** Expressions to avoid (the training set's, when making the validation set). */
  exclude?: Set<string>;
}

/** The tool YAML entry's function name the rows and demonstrations use. */
export const CALCULATOR_TOOL = "calculator";

/** RL rows of the calculator task. */
export function generateCalcTool(o: CalcToolOptions): Row[] {
  const digits = o.digits ?? 3;
  if (!Number.isInteger(digits) || digits < 1 || digits > 6) {
    throw new Error(`digits must be an integer in [1, 6], got ${digits}`);
  }
  const lo = digits === 1 ? 2 : 10 ** (digits - 1);
  const space = (10 ** digits - lo) * 90;
  return distinctRows({ count: o.count, space, seed: o.seed, exclude: o.exclude }, (rand) => {
    const a = randInt(rand, lo, 10 ** digits - 1), b = randInt(rand, 11, 99);
    if (b % 10 === 0) return null; // x*20 is easy in the head
    return { key: `${a}*${b}`, problem: a * b };
  }, (product, expression, index) => {
    const answer = String(product);
    return {
      data_source: CALC_TOOL_DATA_SOURCE,
      agent_name: "tool_agent",
      prompt: [{ role: "user", content: `${expression}=` }],
      ability: "math",
      reward_model: { style: "rule", ground_truth: answer },
      extra_info: {
        split: o.split ?? "train",
        index,
        expression,
        answer: `#### ${answer}`,
        // The calculator keeps no per-trajectory state; the entry names the tool the row expects.
        tools_kwargs: { [CALCULATOR_TOOL]: { create_kwargs: { expression } } },
      },
    };
  });
}

/**
 * The task's train and validation rows as `deno task data --task calc_tool` makes them (and the
 * browser page): validation seeded `seed + 1_000_003`, with no expression of the training rows.
 */
export function calcToolSplits(
  o: { trainSize: number; valSize: number; digits?: number; seed: number },
): { train: Row[]; val: Row[] } {
  const train = generateCalcTool({
    digits: o.digits,
    count: o.trainSize,
    seed: o.seed,
    split: "train",
  });
  const val = generateCalcTool({
    digits: o.digits,
    count: o.valSize,
    seed: o.seed + 1_000_003,
    split: "test",
    exclude: new Set(train.map((r) => (r.extra_info as { expression: string }).expression)),
  });
  return { train, val };
}

/** A demonstration conversation for one RL row: with the calculator, or answered at once. */
export function calcToolConversation(row: Row, useTool: boolean): Row {
  const info = row.extra_info as { expression: string; answer: string };
  const prompt = row.prompt as { role: string; content: string }[];
  const final = { role: "assistant", content: info.answer, tool_calls: null };
  const messages = useTool
    ? [
      ...prompt.map((m) => ({ ...m, tool_calls: null })),
      {
        role: "assistant",
        content: "",
        tool_calls: [{
          type: "function",
          function: {
            name: CALCULATOR_TOOL,
            arguments: JSON.stringify({ expression: info.expression }).replace(":", ": "),
          },
        }],
      },
      { role: "tool", content: info.answer.replace("#### ", ""), tool_calls: null },
      final,
    ]
    : [...prompt.map((m) => ({ ...m, tool_calls: null })), final];
  return { messages, data_source: row.data_source, extra_info: { uses_tool: useTool } };
}

/** Multi-turn SFT rows: a seeded share `toolRatio` of the rows use the calculator. */
export function calcToolSftRows(rows: Row[], o: { toolRatio: number; seed?: number }): Row[] {
  const rand = mulberry32((o.seed ?? 1) + 7);
  return rows.map((r) => calcToolConversation(r, rand() < o.toolRatio));
}
