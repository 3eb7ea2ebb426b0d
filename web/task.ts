/**
 * The synthetic arithmetic task in the tab: the project's generator writes verl rows in memory,
 * and the data layer's prompt builder turns them into prompt items exactly as the Deno trainer
 * does for parquet rows.
 */
import type { Tokenizer } from "../src/io/mod.ts";
import {
  generateArithmetic,
  type Operator,
  type PromptItem,
  rowsToPromptItems,
} from "../src/data/mod.ts";

/** The difficulty knobs of the page's task picker. */
export interface ArithmeticTask {
  /** Digits per operand (1 = 0..9). */
  digits: number;
  /** Operands per expression (2 = `a+b`). */
  operands: number;
  operators: Operator[];
}

export const DEFAULT_TASK: ArithmeticTask = { digits: 1, operands: 2, operators: ["+"] };

/** Distinct problems the task can produce (the generator refuses to ask for more than half). */
export function problemSpace(task: ArithmeticTask): number {
  return 10 ** (task.digits * task.operands) * task.operators.length ** (task.operands - 1);
}

/** Train and validation prompt items with disjoint expressions. */
export function arithmeticItems(
  task: ArithmeticTask,
  options: { tokenizer: Tokenizer; seed: number; maxTrain?: number; maxVal?: number },
): { train: PromptItem[]; val: PromptItem[] } {
  const space = problemSpace(task);
  const valCount = Math.max(1, Math.min(options.maxVal ?? 32, Math.floor(space / 8)));
  const trainCount = Math.min(options.maxTrain ?? 512, Math.floor(space / 2) - valCount);
  const common = { digits: task.digits, operands: task.operands, operators: task.operators };
  const train = generateArithmetic({
    ...common,
    count: trainCount,
    seed: options.seed,
    split: "train",
  });
  const exclude = new Set(train.map((r) => (r.extra_info as { expression: string }).expression));
  const val = generateArithmetic({
    ...common,
    count: valCount,
    seed: options.seed + 1,
    split: "test",
    exclude,
  });
  return {
    train: rowsToPromptItems(train, options.tokenizer),
    val: rowsToPromptItems(val, options.tokenizer),
  };
}
