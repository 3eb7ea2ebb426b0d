/** `file`: every metric of every step as JSON lines in `{run dir}/metrics.jsonl`. */
import { type Logger, LOGGERS } from "./logger.ts";

/** JSON lines `{"step": n, "data": {...}}`, appended and flushed per step. */
export class FileLogger implements Logger {
  #file: Deno.FsFile;
  #enc = new TextEncoder();

  constructor(readonly path: string) {
    const dir = path.slice(0, Math.max(0, path.lastIndexOf("/")));
    if (dir) Deno.mkdirSync(dir, { recursive: true });
    this.#file = Deno.openSync(path, { create: true, append: true });
  }

  log(step: number, metrics: Record<string, number>): void {
    this.#file.writeSync(this.#enc.encode(JSON.stringify({ step, data: metrics }) + "\n"));
  }

  close(): void {
    this.#file.close();
  }
}

LOGGERS.register("file", (o) => new FileLogger(`${o.runDir}/metrics.jsonl`));
