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
