/** A metrics sink: the trainer calls `log` once per step with verl-named scalars. */
export interface Logger {
  log(step: number, metrics: Record<string, number>): void;
  close(): void;
}

const HEADLINE = [
  "critic/score/mean",
  "val-core/",
  "actor/pg_loss",
  "actor/ppo_kl",
  "actor/entropy",
  "actor/grad_norm",
  "critic/vf_loss",
  "response_length/mean",
  "timing_s/step",
  "perf/throughput",
];

function fmt(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v !== 0 && (Math.abs(v) < 1e-3 || Math.abs(v) >= 1e5)) return v.toExponential(2);
  return Number.isInteger(v) ? String(v) : v.toFixed(Math.abs(v) < 1 ? 4 : 2);
}

/** One compact line per step with the headline metrics (the full set goes to the file logger). */
export class ConsoleLogger implements Logger {
  constructor(private readonly print: (line: string) => void = console.log) {}

  log(step: number, metrics: Record<string, number>): void {
    const keys = Object.keys(metrics).filter((k) => HEADLINE.some((h) => k.startsWith(h)));
    keys.sort((a, b) =>
      HEADLINE.findIndex((h) => a.startsWith(h)) - HEADLINE.findIndex((h) => b.startsWith(h))
    );
    const short = (k: string) =>
      k.replace("critic/score/mean", "score").replace("val-core/", "val/").replace(
        /^(actor|critic|timing_s|perf|response_length)\//,
        "",
      );
    this.print(`step ${step} | ${keys.map((k) => `${short(k)} ${fmt(metrics[k])}`).join(" | ")}`);
  }

  close(): void {}
}

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

/** Fans out to several loggers (verl's `trainer.logger` list). */
export class Tracking implements Logger {
  constructor(readonly loggers: Logger[]) {}

  log(step: number, metrics: Record<string, number>): void {
    for (const l of this.loggers) l.log(step, metrics);
  }

  close(): void {
    for (const l of this.loggers) l.close();
  }
}

/**
 * A single-line progress bar for long stages (generation, update) on a terminal; silent when
 * stdout is not a TTY so logs stay clean.
 */
export class Progress {
  #start = performance.now();
  #enabled: boolean;
  #enc = new TextEncoder();

  constructor(readonly label: string, readonly total: number) {
    const deno = (globalThis as { Deno?: typeof Deno }).Deno;
    this.#enabled = !!deno && deno.stdout.isTerminal();
  }

  update(done: number, note = ""): void {
    if (!this.#enabled) return;
    const width = 24;
    const filled = Math.round((done / Math.max(1, this.total)) * width);
    const secs = ((performance.now() - this.#start) / 1000).toFixed(1);
    const bar = "#".repeat(filled) + ".".repeat(width - filled);
    const line = `\r\x1b[2K${this.label} [${bar}] ${done}/${this.total} ${secs}s ${note}`;
    Deno.stdout.writeSync(this.#enc.encode(line));
  }

  done(): void {
    if (this.#enabled) Deno.stdout.writeSync(this.#enc.encode("\r\x1b[2K"));
  }
}
