/**
 * A run's metrics read back from what its loggers wrote: `metrics.jsonl` (the `file` logger) or
 * the event files under `tensorboard/` (the `tensorboard` logger). JSONL wins when both exist.
 * Steps may repeat (a resumed run logs again from its checkpoint): per metric, the last value
 * logged for a step wins.
 */
import { type EventScalar, readEventFile } from "./events.ts";

/** (step, value), finite values only. */
export type Point = [step: number, value: number];

export interface RunMetrics {
  /** The file or folder the metrics came from. */
  source: string;
  format: "jsonl" | "tensorboard";
  /** Per metric key, its points sorted by step. */
  series: Map<string, Point[]>;
  /** Every step that logged anything, ascending. */
  steps: number[];
  /** Things skipped on the way (a torn last line, non-finite values), for the report. */
  notes: string[];
}

/** The path holds no run metrics at all (as opposed to a broken file). */
export class MetricsNotFound extends Error {
  override name = "MetricsNotFound";
}

/** Collects values, the last per (key, step) winning. */
class Collector {
  #byKey = new Map<string, Map<number, number>>();
  #steps = new Set<number>();
  nonFinite = 0;

  add(step: number, key: string, value: unknown): void {
    this.#steps.add(step);
    if (typeof value !== "number" || !Number.isFinite(value)) {
      // JSON writes NaN and ±Infinity as null; such a value also drops an earlier one.
      this.nonFinite++;
      this.#byKey.get(key)?.delete(step);
      return;
    }
    let m = this.#byKey.get(key);
    if (!m) this.#byKey.set(key, m = new Map());
    m.set(step, value);
  }

  series(): Map<string, Point[]> {
    const out = new Map<string, Point[]>();
    for (const key of [...this.#byKey.keys()].sort()) {
      const pts = [...this.#byKey.get(key)!].sort((a, b) => a[0] - b[0]);
      if (pts.length) out.set(key, pts);
    }
    return out;
  }

  steps(): number[] {
    return [...this.#steps].sort((a, b) => a - b);
  }
}

function finish(c: Collector, source: string, format: RunMetrics["format"], notes: string[]) {
  if (c.nonFinite) notes.push(`${c.nonFinite} non-finite value(s) left out`);
  const run: RunMetrics = { source, format, series: c.series(), steps: c.steps(), notes };
  if (!run.steps.length) throw new Error(`${source}: holds no metrics`);
  return run;
}

/** Parses the `file` logger's lines `{"step": n, "data": {...}}`. */
export function parseJsonl(text: string, path: string): RunMetrics {
  const c = new Collector();
  const notes: string[] = [];
  const lines = text.split("\n");
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    let rec: unknown;
    try {
      rec = JSON.parse(line);
    } catch {
      // A run killed mid-write leaves a torn last line; anything else is a broken file.
      if (lines.slice(i + 1).every((l) => !l.trim())) {
        notes.push(`line ${i + 1} is cut short and was left out`);
        return;
      }
      throw new Error(`${path}:${i + 1}: not JSON`);
    }
    const r = rec as { step?: unknown; data?: unknown };
    if (typeof r?.step !== "number" || typeof r.data !== "object" || r.data === null) {
      throw new Error(`${path}:${i + 1}: expected {"step": n, "data": {...}}`);
    }
    for (const [k, v] of Object.entries(r.data)) c.add(r.step, k, v);
  });
  return finish(c, path, "jsonl", notes);
}

/** Merges scalars of event files given in write order (our writer names them by start time). */
export function fromEvents(source: string, files: EventScalar[][]): RunMetrics {
  const c = new Collector();
  for (const f of files) for (const s of f) c.add(s.step, s.tag, s.value);
  return finish(c, source, "tensorboard", []);
}

async function kind(path: string): Promise<"file" | "dir" | null> {
  try {
    const s = await Deno.stat(path);
    return s.isDirectory ? "dir" : "file";
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw new Error(`${path}: ${e instanceof Error ? e.message : e}`);
  }
}

async function eventFiles(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile && e.name.includes("tfevents")) names.push(e.name);
  }
  return names.sort().map((n) => `${dir}/${n}`);
}

async function readTensorBoard(source: string, files: string[]): Promise<RunMetrics> {
  const scalars = [];
  for (const f of files) scalars.push(readEventFile(f, await Deno.readFile(f)));
  return fromEvents(source, scalars);
}

/**
 * Reads a run: its folder (`metrics.jsonl`, else `tensorboard/`, else event files in the folder
 * itself), a `metrics.jsonl`, an event file, or a `tensorboard/` folder. Errors name the path and
 * what is missing.
 */
export async function readRunMetrics(path: string): Promise<RunMetrics> {
  const p = path.replace(/\/+$/, "") || "/";
  const k = await kind(p);
  if (k === null) throw new MetricsNotFound(`${p}: no such file or folder`);
  if (k === "file") {
    if (/tfevents/.test(p.split("/").pop()!)) return readTensorBoard(p, [p]);
    return parseJsonl(await Deno.readTextFile(p), p);
  }
  if (await kind(`${p}/metrics.jsonl`) === "file") {
    return parseJsonl(await Deno.readTextFile(`${p}/metrics.jsonl`), `${p}/metrics.jsonl`);
  }
  if (await kind(`${p}/tensorboard`) === "dir") {
    const files = await eventFiles(`${p}/tensorboard`);
    if (!files.length) throw new Error(`${p}/tensorboard: no event files (events.out.tfevents.*)`);
    return readTensorBoard(`${p}/tensorboard`, files);
  }
  const here = await eventFiles(p);
  if (here.length) return readTensorBoard(p, here);
  throw new MetricsNotFound(
    `${p}: no metrics.jsonl and no tensorboard/ event files (a run folder written with ` +
      `trainer.logger=[file] or [tensorboard])`,
  );
}
