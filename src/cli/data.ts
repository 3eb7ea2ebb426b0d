/**
 * `deno task data [--task arithmetic|calc_tool|search] [--out_dir DIR] [--train_size N]
 * [--val_size N] [--seed S] ...`: writes a synthetic task as verl parquet files (DIR/train.parquet
 * and DIR/val.parquet; validation problems never appear in training).
 * - arithmetic: `[--digits D] [--operands K] [--other_digits D2] [--ops +,-,*] [--plain_ratio R]`.
 * - calc_tool: `[--digits D] [--tool_ratio R]`; also DIR/sft_train.parquet and DIR/sft_val.parquet,
 *   multi-turn demonstrations (a share R of them call the calculator).
 * - search: a knowledge base DIR/corpus.jsonl and questions only it answers.
 */
import {
  calcToolSftRows,
  calcToolSplits,
  generateArithmetic,
  generateSearchTask,
  type Operator,
  type Row,
  writeParquet,
} from "../data/mod.ts";
import { runCli } from "./run.ts";

const TASKS = {
  arithmetic: ["digits", "other_digits", "operands", "plain_ratio", "ops"],
  calc_tool: ["digits", "tool_ratio"],
  search: [],
} as const;

const DEFAULTS = {
  task: "arithmetic",
  out_dir: "",
  train_size: "",
  val_size: "",
  digits: "",
  other_digits: "0",
  operands: "2",
  plain_ratio: "0",
  ops: "+,-",
  tool_ratio: "0.25",
  seed: "1",
};

/** Per task: out_dir, train_size, val_size, digits defaults. */
const TASK_DEFAULTS: Record<keyof typeof TASKS, Partial<Record<Flag, string>>> = {
  arithmetic: { out_dir: "data/arithmetic", train_size: "10000", val_size: "500", digits: "2" },
  calc_tool: { out_dir: "data/calc_tool", train_size: "2000", val_size: "100", digits: "3" },
  search: { out_dir: "data/search", train_size: "400", val_size: "50" },
};

type Flag = keyof typeof DEFAULTS;

/** `--key value` / `--key=value` flags over the defaults; unknown flags are errors. */
export function parseFlags(args: string[]): Record<Flag, string> {
  const out = { ...DEFAULTS };
  const given = new Set<Flag>();
  for (let i = 0; i < args.length; i++) {
    const m = /^--([a-z_]+)(?:=(.*))?$/.exec(args[i]);
    if (!m) throw new Error(`unexpected argument "${args[i]}"`);
    const key = m[1] as Flag;
    if (!Object.hasOwn(DEFAULTS, key)) {
      throw new Error(
        `unknown flag --${m[1]} (flags: ${Object.keys(DEFAULTS).map((k) => `--${k}`).join(" ")})`,
      );
    }
    const value = m[2] ?? args[++i];
    if (value === undefined) throw new Error(`--${key} needs a value`);
    out[key] = value;
    given.add(key);
  }
  if (!Object.hasOwn(TASKS, out.task)) {
    throw new Error(`--task must be one of ${Object.keys(TASKS).join(", ")}, got "${out.task}"`);
  }
  const task = out.task as keyof typeof TASKS;
  const own: readonly string[] = TASKS[task];
  const other: string[] = Object.values(TASKS).flat().filter((k) => !own.includes(k));
  const unused = [...given].find((k) => other.includes(k));
  if (unused) throw new Error(`--${unused} does not apply to --task ${task}`);
  for (const [k, v] of Object.entries(TASK_DEFAULTS[task])) {
    if (!given.has(k as Flag)) out[k as Flag] = v;
  }
  return out;
}

function int(flags: Record<Flag, string>, key: Flag, min: number): number {
  const v = Number(flags[key]);
  if (!Number.isInteger(v) || v < min) {
    throw new Error(`--${key} must be an integer >= ${min}, got "${flags[key]}"`);
  }
  return v;
}

function ratio(flags: Record<Flag, string>, key: Flag): number {
  const v = Number(flags[key]);
  if (flags[key].trim() === "" || !(v >= 0 && v <= 1)) {
    throw new Error(`--${key} must be a number in [0, 1], got "${flags[key]}"`);
  }
  return v;
}

const expressionsOf = (rows: Row[]) =>
  new Set(rows.map((r) => (r.extra_info as { expression: string }).expression));

function arithmetic(f: Record<Flag, string>): Record<string, Row[]> {
  const common = {
    digits: int(f, "digits", 1),
    otherDigits: int(f, "other_digits", 0) || undefined,
    operands: int(f, "operands", 2),
    plainRatio: ratio(f, "plain_ratio"),
    operators: f.ops.split(",").map((s) => s.trim()) as Operator[],
  };
  const seed = int(f, "seed", 0);
  const train = generateArithmetic({
    ...common,
    count: int(f, "train_size", 1),
    seed,
    split: "train",
  });
  const val = generateArithmetic({
    ...common,
    count: int(f, "val_size", 1),
    seed: seed + 1_000_003,
    split: "test",
    exclude: expressionsOf(train),
  });
  return { train, val };
}

function calcTool(f: Record<Flag, string>): Record<string, Row[]> {
  const seed = int(f, "seed", 0);
  const { train, val } = calcToolSplits({
    digits: int(f, "digits", 1),
    trainSize: int(f, "train_size", 1),
    valSize: int(f, "val_size", 1),
    seed,
  });
  const toolRatio = ratio(f, "tool_ratio");
  return {
    train,
    val,
    sft_train: calcToolSftRows(train, { toolRatio, seed }),
    sft_val: calcToolSftRows(val, { toolRatio, seed: seed + 1 }),
  };
}

/** Generates and writes the task's files; returns the paths written. */
export async function main(args: string[]): Promise<string[]> {
  const f = parseFlags(args);
  await Deno.mkdir(f.out_dir, { recursive: true });
  const paths: string[] = [];
  let files: Record<string, Row[]>;
  if (f.task === "search") {
    const s = generateSearchTask({
      trainSize: int(f, "train_size", 1),
      valSize: int(f, "val_size", 1),
      seed: int(f, "seed", 0),
    });
    const corpus = `${f.out_dir}/corpus.jsonl`;
    const tmp = `${corpus}.tmp`;
    await Deno.writeTextFile(tmp, s.corpus.map((d) => JSON.stringify(d)).join("\n") + "\n");
    await Deno.rename(tmp, corpus);
    paths.push(corpus);
    files = { train: s.train, val: s.val };
  } else files = f.task === "calc_tool" ? calcTool(f) : arithmetic(f);
  for (const [name, rows] of Object.entries(files)) {
    const path = `${f.out_dir}/${name}.parquet`;
    await writeParquet(path, { rows });
    paths.push(path);
    console.log(`wrote ${rows.length} rows to ${path}`);
  }
  return paths;
}

if (import.meta.main) await runCli("data", () => main(Deno.args), { exitCode: () => 2 });
