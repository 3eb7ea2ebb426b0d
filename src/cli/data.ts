/**
 * `deno task data [--out_dir DIR] [--train_size N] [--val_size N] [--digits D] [--operands K]
 * [--other_digits D2] [--ops +,-,*] [--plain_ratio R] [--seed S]`: writes the synthetic arithmetic task as verl parquet files
 * (DIR/train.parquet and DIR/val.parquet; validation problems never appear in training).
 */
import { generateArithmetic, type Operator, writeParquet } from "../data/mod.ts";
import { runCli } from "./run.ts";

const DEFAULTS = {
  out_dir: "data/arithmetic",
  train_size: "10000",
  val_size: "500",
  digits: "2",
  other_digits: "0",
  operands: "2",
  plain_ratio: "0",
  ops: "+,-",
  seed: "1",
};

type Flag = keyof typeof DEFAULTS;

/** `--key value` / `--key=value` flags over the defaults; unknown flags are errors. */
export function parseFlags(args: string[]): Record<Flag, string> {
  const out = { ...DEFAULTS };
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

/** Generates and writes both splits; returns the paths written. */
export async function main(args: string[]): Promise<string[]> {
  const f = parseFlags(args);
  const ops = f.ops.split(",").map((s) => s.trim()) as Operator[];
  const common = {
    digits: int(f, "digits", 1),
    otherDigits: int(f, "other_digits", 0) || undefined,
    operands: int(f, "operands", 2),
    plainRatio: ratio(f, "plain_ratio"),
    operators: ops,
  };
  const seed = int(f, "seed", 0);
  const train = generateArithmetic({
    ...common,
    count: int(f, "train_size", 1),
    seed,
    split: "train",
  });
  const exclude = new Set(train.map((r) => (r.extra_info as { expression: string }).expression));
  const val = generateArithmetic({
    ...common,
    count: int(f, "val_size", 1),
    seed: seed + 1_000_003,
    split: "test",
    exclude,
  });
  await Deno.mkdir(f.out_dir, { recursive: true });
  const paths = [`${f.out_dir}/train.parquet`, `${f.out_dir}/val.parquet`];
  await writeParquet(paths[0], { rows: train });
  await writeParquet(paths[1], { rows: val });
  console.log(`wrote ${train.length} rows to ${paths[0]} and ${val.length} rows to ${paths[1]}`);
  return paths;
}

if (import.meta.main) await runCli("data", () => main(Deno.args), { exitCode: () => 2 });
