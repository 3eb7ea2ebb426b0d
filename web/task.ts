/**
 * The prompts of a run: the built-in arithmetic task (the project's generator writes verl rows in
 * memory), or a parquet / JSONL file of verl rows the user picked. Either way the data layer's
 * prompt builder turns rows into prompt items exactly as the Deno trainer does for parquet.
 */
import type { ChatMessage, Tokenizer } from "../src/io/mod.ts";
import {
  calcToolConversation,
  calcToolSplits,
  DataError,
  generateArithmetic,
  parquetRows,
  type PromptItem,
  type Row,
  rowsToPromptItems,
} from "../src/data/mod.ts";
import type { DataInfo, PickedFile } from "./protocol.ts";
import { rewardedAnswers } from "./reward.ts";
import { withoutMarkers } from "./samples.ts";
import type { ArithmeticTask, RunSettings } from "./settings.ts";

/** The `source` of the built-in task's rows. */
export const BUILTIN_SOURCE = "built-in arithmetic";
/** The `source` of the built-in calculator task's rows. */
export const CALC_TOOL_SOURCE = "built-in calculator tool";

/** Whether rows came from a built-in task (a saved run's rows are regenerated from settings). */
export function isBuiltinSource(source: string): boolean {
  return source === BUILTIN_SOURCE || source === CALC_TOOL_SOURCE;
}

/** Rows of a run, split into training and held-out prompts. */
export interface PromptRows {
  source: string;
  train: Row[];
  val: Row[];
}

export interface PromptItems {
  train: PromptItem[];
  val: PromptItem[];
}

/** Distinct problems the task can produce (the generator refuses to ask for more than half). */
export function problemSpace(task: ArithmeticTask): number {
  return 10 ** (task.digits * task.operands) * task.operators.length ** (task.operands - 1);
}

/** Train and validation rows of the built-in task, with disjoint expressions. */
export function arithmeticRows(
  task: ArithmeticTask,
  options: { seed: number; maxTrain?: number; maxVal?: number },
): PromptRows {
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
  return { source: BUILTIN_SOURCE, train, val };
}

/**
 * The calculator task's rows as `deno task data --task calc_tool` makes them (its 2000 training
 * problems, seed 1); the held-out rows are the first `valPrompts` of its validation set.
 */
export function calcToolRows(options: { seed: number; valPrompts: number }): PromptRows {
  const { train, val } = calcToolSplits({
    trainSize: 2000,
    valSize: options.valPrompts,
    digits: 3,
    seed: options.seed,
  });
  return { source: CALC_TOOL_SOURCE, train, val };
}

/** The built-in task's rows under the page's settings. */
export function builtinRows(s: RunSettings): PromptRows {
  if (s.taskName === "calc_tool") {
    return calcToolRows({ seed: s.seed, valPrompts: s.valPrompts });
  }
  return arithmeticRows(s.task, { seed: s.seed, maxVal: s.valPrompts });
}

/**
 * A conversation the calculator task rewards for `row` (the demonstration the model's SFT saw:
 * call, reply, `#### n`), each message as the chat template renders it after the ones before.
 */
export function rewardedConversation(
  row: Row,
  tokenizer: Tokenizer,
): { role: string; content: string }[] {
  const messages = calcToolConversation(row, true).messages as ChatMessage[];
  let before = "";
  return messages.map((m, i) => {
    const text = tokenizer.applyChatTemplate(messages.slice(0, i + 1));
    const delta = text.startsWith(before) ? text.slice(before.length) : text;
    before = text;
    return { role: m.role, content: withoutMarkers(delta) };
  });
}

/** JSON Lines (or one JSON array) of rows; a bad line is a DataError naming it. */
function jsonRows(text: string, file: string): Row[] {
  if (text.trimStart().startsWith("[")) {
    try {
      return JSON.parse(text) as Row[];
    } catch (e) {
      throw new DataError(file, `not valid JSON (${(e as Error).message})`);
    }
  }
  const rows: Row[] = [];
  for (const [i, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    try {
      rows.push(JSON.parse(line) as Row);
    } catch (e) {
      throw new DataError(file, `line ${i + 1} is not valid JSON (${(e as Error).message})`);
    }
  }
  return rows;
}

/**
 * A picked prompts file (`.parquet`, `.jsonl`, `.json`) split into training and held-out rows:
 * the last tenth (1 to `maxVal` rows) is held out; a one-row file trains and validates on it.
 */
export async function readPromptFile(f: PickedFile, maxVal = 64): Promise<PromptRows> {
  const name = f.path;
  let rows: Row[];
  if (/\.parquet$/i.test(name)) {
    rows = await parquetRows(new Uint8Array(await f.file.arrayBuffer()), {
      file: name,
      required: ["prompt", "data_source", "reward_model"],
    });
  } else if (/\.jsonl?$/i.test(name)) {
    rows = jsonRows(await f.file.text(), name);
  } else {
    throw new DataError(name, "expected a .parquet, .jsonl or .json file of verl rows");
  }
  if (rows.length === 0) throw new DataError(name, "holds no rows");
  if (rows.length === 1) return { source: name, train: rows, val: rows };
  const val = Math.max(1, Math.min(maxVal, Math.floor(rows.length / 10)));
  return { source: name, train: rows.slice(0, -val), val: rows.slice(-val) };
}

/** Prompt items (chat template + tokenizer); a malformed row is a DataError naming it. */
export function promptItems(rows: PromptRows, tokenizer: Tokenizer): PromptItems {
  if (rows.train === rows.val) {
    const all = rowsToPromptItems(rows.train, tokenizer, { source: rows.source });
    return { train: all, val: all };
  }
  // One call, so an error's row number is its row in the file.
  const all = rowsToPromptItems([...rows.train, ...rows.val], tokenizer, { source: rows.source });
  return { train: all.slice(0, rows.train.length), val: all.slice(rows.train.length) };
}

/**
 * What the page shows about a run's prompts: counts, sources, the first held-out prompt as the model
 * sees it, and what each built-in scorer rewards for it. `full` first builds every prompt, so a
 * malformed row (or one the tokenizer cannot template) is an error naming file, row and column.
 */
export function describeRows(rows: PromptRows, tokenizer: Tokenizer, full: boolean): DataInfo {
  if (full) promptItems(rows, tokenizer);
  const [first] = rowsToPromptItems(rows.val.slice(0, 1), tokenizer, { source: rows.source });
  const sources = new Set([...rows.train, ...rows.val].map((r) => String(r.data_source)));
  return {
    source: rows.source,
    train: rows.train.length,
    val: rows.val.length,
    dataSources: [...sources].slice(0, 8),
    example: {
      prompt: tokenizer.decode(first.inputIds, { skipSpecialTokens: false }),
      groundTruth: first.groundTruth,
      dataSource: first.dataSource,
    },
    rewarded: rewardedAnswers(first.dataSource, first.groundTruth),
    ...(rows.source === CALC_TOOL_SOURCE
      ? { conversation: rewardedConversation(rows.val[0], tokenizer) }
      : {}),
  };
}
