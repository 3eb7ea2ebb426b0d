/**
 * Metric files that agree with the checkpoint a run resumes from. An interrupted run may have
 * logged steps after its last checkpoint; the resumed run logs them again. So before appending,
 * a logger cuts its files back to the resumed step (records after it are dropped); a fresh run
 * (resume step -1) moves an earlier run's files aside instead of mixing them with its own.
 */

/** Where a run starts: `resumeStep` N keeps records of steps <= N; -1 is a fresh run. */
export interface ResumeOptions {
  resumeStep?: number;
  print?: (line: string) => void;
}

/** Writes all of `bytes` (a write may take only part of them). */
export function writeAll(f: Deno.FsFile, bytes: Uint8Array): void {
  let off = 0;
  while (off < bytes.length) off += f.writeSync(bytes.subarray(off));
}

/**
 * The temporary file of `replaceFile` in `dir`: a hidden name with no trace of the file it
 * replaces, so that a crash between writing it and the rename never leaves something that
 * TensorBoard (any name holding "tfevents") or a metrics reader takes for a file of the run.
 */
export function replacementTemp(dir: string, pid = Deno.pid): string {
  return `${dir}/.replacing.tmp-${pid}`;
}

/** Replaces `path` with `bytes` through a synced temp file and a rename, then syncs the folder. */
export function replaceFile(path: string, bytes: Uint8Array): void {
  const dir = path.slice(0, Math.max(1, path.lastIndexOf("/")));
  const tmp = replacementTemp(dir);
  const f = Deno.openSync(tmp, { write: true, create: true, truncate: true });
  try {
    writeAll(f, bytes);
    f.syncSync();
  } finally {
    f.close();
  }
  Deno.renameSync(tmp, path);
  syncDir(dir);
}

/** Temporary files of `replaceFile`, and the `{file}.tmp-{pid}` names older versions used. */
const TEMP_RE = /^(\.replacing|metrics\.jsonl|events\.out\.tfevents\..+)\.tmp-\d+$/;

/**
 * Removes the temporary files of `replaceFile` that an interrupted run left in `dir` (the file
 * they were to replace is intact, and this run's cut redoes the work); says so through `print`.
 */
export function removeStaleTemps(dir: string, o: ResumeOptions): void {
  const own = replacementTemp(dir).split("/").at(-1)!;
  const stale: string[] = [];
  try {
    for (const e of Deno.readDirSync(dir)) {
      if (TEMP_RE.test(e.name) && e.name !== own) stale.push(`${dir}/${e.name}`);
    }
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    throw e;
  }
  for (const path of stale) Deno.removeSync(path);
  if (stale.length) o.print?.(`removed leftovers of an interrupted run: ${stale.join(", ")}`);
}

export function syncDir(dir: string): void {
  const f = Deno.openSync(dir, { read: true });
  try {
    f.syncSync();
  } finally {
    f.close();
  }
}

/** The current time for file names: 2030-01-02T03-04-05-678Z. */
export function stampNow(): string {
  return new Date().toISOString().replace(/[:.]/g, "-");
}

/** `metrics.jsonl` -> `metrics.replaced-{stamp}.jsonl`: where a fresh run puts an earlier run's. */
export function asideName(path: string): string {
  const dot = path.lastIndexOf(".");
  return dot > path.lastIndexOf("/")
    ? `${path.slice(0, dot)}.replaced-${stampNow()}${path.slice(dot)}`
    : `${path}.replaced-${stampNow()}`;
}

/**
 * Cuts the JSON lines `{"step": n, ...}` of `path` back to steps <= `resumeStep`, dropping torn
 * lines; with resumeStep -1 the file is moved aside whole. No-op when nothing would change.
 */
export function cutJsonl(path: string, o: ResumeOptions): void {
  if (o.resumeStep === undefined) return;
  removeStaleTemps(path.slice(0, Math.max(1, path.lastIndexOf("/"))), o);
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    throw e;
  }
  if (!text.trim()) return;
  if (o.resumeStep < 0) {
    const aside = asideName(path);
    Deno.renameSync(path, aside);
    o.print?.(`notice: ${path} held an earlier run's metrics; moved to ${aside}`);
    return;
  }
  const lines = text.split("\n").filter((l) => l.trim());
  const kept = lines.filter((line) => {
    try {
      const step = (JSON.parse(line) as { step?: unknown }).step;
      return typeof step === "number" && step <= o.resumeStep!;
    } catch {
      return false; // a line torn by a crash
    }
  });
  if (kept.length === lines.length && text.endsWith("\n")) return;
  replaceFile(path, new TextEncoder().encode(kept.map((l) => l + "\n").join("")));
  o.print?.(
    `${path}: dropped ${lines.length - kept.length} record(s) after step ${o.resumeStep} ` +
      "(logged by the interrupted run; this run logs those steps again)",
  );
}
