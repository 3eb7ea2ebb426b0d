/**
 * The bad-input catalogue's machinery: a shared fixture (a tiny model folder, train/val parquet
 * files, reward modules), one scratch folder per case, and a runner that starts the real entry
 * point as a subprocess and checks that it fails with a message naming the input.
 */
import { makeTinyRun } from "../tiny_run.ts";

export type Task = "train" | "sft" | "generate" | "eval" | "data";

/** What every case can point at. */
export interface Fixture {
  root: string; // shared, read-only after setup
  model: string; // a valid tiny model folder
  train: string; // valid train parquet
  val: string; // valid val parquet
  /** Overrides of a valid one-step tiny training run (append the case's own after them). */
  run: string[];
}

/** A case's own scratch folder (it may write broken files there) plus the shared fixture. */
export interface CaseContext extends Fixture {
  dir: string;
}

/** A bad input: a command a user could type and the error it must print. */
export interface BadInput {
  name: string;
  task: Task;
  args: (c: CaseContext) => string[];
  /** Writes the broken files the case needs under `c.dir`. */
  setup?: (c: CaseContext) => void | Promise<void>;
  /** Must appear in stdout + stderr; it should name the key, file, row or value at fault. */
  expect: (c: CaseContext) => RegExp;
}

export interface CaseResult {
  name: string;
  task: Task;
  code: number;
  output: string;
  ok: boolean;
  why: string;
  seconds: number;
}

const ENTRY: Record<Task, string> = {
  train: "../../src/cli/train.ts",
  sft: "../../src/cli/sft.ts",
  generate: "../../src/cli/generate.ts",
  eval: "../../src/cli/eval.ts",
  data: "../../src/cli/data.ts",
};

export async function makeFixture(root: string): Promise<Fixture> {
  const tiny = await makeTinyRun(root, { trainSize: 8, valSize: 4 });
  return {
    root,
    model: tiny.modelPath,
    train: `${root}/train.parquet`,
    val: `${root}/val.parquet`,
    run: [
      ...tiny.overrides.filter((o) => !o.startsWith("trainer.default_local_dir=")),
      "trainer.total_training_steps=1",
      "trainer.test_freq=-1",
      "trainer.save_freq=-1",
    ],
  };
}

/** Escapes a path (or any text) for use inside a RegExp. */
export function lit(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

export async function runCase(fixture: Fixture, c: BadInput, index: number): Promise<CaseResult> {
  const dir = `${fixture.root}/case_${index}`;
  Deno.mkdirSync(dir, { recursive: true });
  const ctx: CaseContext = { ...fixture, dir };
  const t0 = performance.now();
  await c.setup?.(ctx);
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(ENTRY[c.task], import.meta.url).pathname, ...c.args(ctx)],
    cwd: dir,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const output = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  const pattern = c.expect(ctx);
  const why = out.code === 0
    ? "exited 0"
    : !pattern.test(output)
    ? `output does not match ${pattern}`
    : "";
  return {
    name: c.name,
    task: c.task,
    code: out.code,
    output,
    ok: why === "",
    why,
    seconds: (performance.now() - t0) / 1000,
  };
}

/** Runs all cases, `parallel` at a time, in order of index. */
export async function runAll(
  fixture: Fixture,
  cases: BadInput[],
  parallel: number,
): Promise<CaseResult[]> {
  const results: CaseResult[] = new Array(cases.length);
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const i = next++;
      results[i] = await runCase(fixture, cases[i], i);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return results;
}
