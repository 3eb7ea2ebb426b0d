/** `file`: every metric of every step as JSON lines in `{run dir}/metrics.jsonl`. */
import { type Logger, LOGGERS } from "./logger.ts";
import { cutJsonl, type ResumeOptions, writeAll } from "./resume.ts";

/**
 * JSON lines `{"step": n, "data": {...}}`, appended per step (each line one write, so a crash
 * leaves at most a torn last line); `flush` syncs them to the disk. A resumed run first cuts the
 * file back to its resume step (see resume.ts).
 */
export class FileLogger implements Logger {
  #file: Deno.FsFile;
  #enc = new TextEncoder();

  constructor(readonly path: string, options: ResumeOptions = {}) {
    const dir = path.slice(0, Math.max(0, path.lastIndexOf("/")));
    if (dir) Deno.mkdirSync(dir, { recursive: true });
    cutJsonl(path, options);
    this.#file = Deno.openSync(path, { create: true, append: true });
  }

  log(step: number, metrics: Record<string, number>): void {
    writeAll(this.#file, this.#enc.encode(JSON.stringify({ step, data: metrics }) + "\n"));
  }

  flush(): void {
    this.#file.syncSync();
  }

  close(): void {
    this.#file.close();
  }
}

LOGGERS.register("file", (o) => new FileLogger(`${o.runDir}/metrics.jsonl`, o));
