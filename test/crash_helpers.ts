/**
 * Helpers of the crash and resume tests: the real `deno task train` and `deno task sft` as
 * subprocesses (so they can be SIGKILLed), and readers of what a run leaves on disk
 * (metrics.jsonl, TensorBoard event files).
 */
import { eventStep, readRecords } from "../src/tracking/mod.ts";

const TRAIN = new URL("../src/cli/train.ts", import.meta.url).pathname;
const SFT = new URL("../src/cli/sft.ts", import.meta.url).pathname;

export interface RunResult {
  code: number;
  signal: Deno.Signal | null;
  text: string;
}

export function train(
  cwd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<RunResult> {
  return run(TRAIN, cwd, args, env);
}

export function sft(
  cwd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<RunResult> {
  return run(SFT, cwd, args, env);
}

async function run(
  entry: string,
  cwd: string,
  args: string[],
  env: Record<string, string>,
): Promise<RunResult> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", entry, ...args],
    cwd,
    env: { ...env, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    signal: out.signal,
    text: new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr),
  };
}

export interface KilledRun extends RunResult {
  pid: number;
  /** The parent's timer killed it (else it exited, or killed itself at a kill point). */
  timed: boolean;
}

/**
 * `train()` that can be SIGKILLed from outside: with `killAfterMs`, that long after the trainer
 * prints its adapter line (the end of Deno's and the GPU's start-up); `onAdapter` gets that moment.
 */
export async function trainKilled(
  cwd: string,
  args: string[],
  o: { env?: Record<string, string>; killAfterMs?: number; onAdapter?: () => void } = {},
): Promise<KilledRun> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", TRAIN, ...args],
    cwd,
    env: { ...o.env, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  let seen = false, timed = false;
  const read = async (stream: ReadableStream<Uint8Array>) => {
    const dec = new TextDecoder();
    for await (const chunk of stream) {
      text += dec.decode(chunk, { stream: true });
      if (seen || !/^adapter:/m.test(text)) continue;
      seen = true;
      o.onAdapter?.();
      if (o.killAfterMs === undefined) continue;
      timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
          timed = true;
        } catch { /* already exited */ }
      }, o.killAfterMs);
    }
  };
  await Promise.all([read(child.stdout), read(child.stderr)]);
  clearTimeout(timer);
  const status = await child.status;
  return { pid: child.pid, code: status.code, signal: status.signal, timed, text };
}

export interface JsonlRecord {
  step: number;
  data: Record<string, number>;
}

export function jsonlRecords(path: string): JsonlRecord[] {
  return Deno.readTextFileSync(path).trim().split("\n").map((l) => JSON.parse(l));
}

/** Steps of the records that hold a step's main metrics (training/global_step), in file order. */
export function loggedSteps(records: JsonlRecord[]): number[] {
  return records.filter((r) => "training/global_step" in r.data).map((r) => r.step);
}

/** Each step's metrics merged over its records, without timings and throughput (they vary). */
export function metricsByStep(records: JsonlRecord[]): Map<number, Record<string, number>> {
  const out = new Map<number, Record<string, number>>();
  for (const { step, data } of records) {
    const kept = Object.entries(data).filter(([k]) =>
      !k.startsWith("timing_s/") && !k.startsWith("perf/")
    );
    out.set(step, { ...out.get(step), ...Object.fromEntries(kept) });
  }
  return out;
}

/** Steps of the TensorBoard events (all files of `dir`, name order) that carry `tag`. */
export function eventSteps(dir: string, tag: string): number[] {
  const needle = new TextEncoder().encode(tag);
  const has = (b: Uint8Array) => b.some((_, i) => needle.every((x, j) => b[i + j] === x));
  const names = [...Deno.readDirSync(dir)].filter((e) => e.isFile).map((e) => e.name).sort();
  return names.flatMap((n) =>
    readRecords(Deno.readFileSync(`${dir}/${n}`)).filter(has).map(eventStep)
  );
}

/** Every name under `dir`, recursively, relative to it. */
export function tree(dir: string, prefix = ""): string[] {
  return [...Deno.readDirSync(prefix ? `${dir}/${prefix}` : dir)].flatMap((e) => {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    return e.isDirectory ? [rel, ...tree(dir, rel)] : [rel];
  }).sort();
}

/** Rewrites one line of a checkpoint's checksums.sha256 after a test edits that file on purpose. */
export async function rehash(dir: string, rel: string): Promise<void> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", Deno.readFileSync(`${dir}/${rel}`)),
  );
  const hex = [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
  const path = `${dir}/checksums.sha256`;
  const lines = Deno.readTextFileSync(path).split("\n").map((l) =>
    l.endsWith(`  ${rel}`) ? `${hex}  ${rel}` : l
  );
  Deno.writeTextFileSync(path, lines.join("\n"));
}

/** Escapes text for use inside a RegExp. */
export function lit(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
