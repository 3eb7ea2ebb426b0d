/** How far a long stage has got: `done` of `total` units (decode steps, mini-batches, batches). */
export type Tick = (done: number, total: number) => void;

/**
 * A single-line progress bar for long stages (generation, update) on a terminal; silent when
 * stdout is not a TTY so logs stay clean.
 */
export class Progress {
  #start = performance.now();
  #enabled: boolean;
  #enc = new TextEncoder();

  #write: (text: string) => void;

  /** `write` replaces the terminal (and turns the bar on whatever stdout is). */
  constructor(
    readonly label: string,
    readonly total: number,
    options: { write?: (text: string) => void } = {},
  ) {
    const deno = (globalThis as { Deno?: typeof Deno }).Deno;
    this.#enabled = !!options.write || (!!deno && deno.stdout.isTerminal());
    this.#write = options.write ?? ((text) => Deno.stdout.writeSync(this.#enc.encode(text)));
  }

  update(done: number, note = ""): void {
    if (!this.#enabled) return;
    const width = 24;
    const filled = Math.round((done / Math.max(1, this.total)) * width);
    const secs = ((performance.now() - this.#start) / 1000).toFixed(1);
    const bar = "#".repeat(filled) + ".".repeat(width - filled);
    const line = `\r\x1b[2K${this.label} [${bar}] ${done}/${this.total} ${secs}s ${note}`;
    this.#write(line);
  }

  /** A Tick that redraws the bar at `done` with the stage's own count after its name. */
  tick(done: number, name: string): Tick {
    return (d, t) => this.update(done, `${name} ${d}/${t}`);
  }

  done(): void {
    if (this.#enabled) this.#write("\r\x1b[2K");
  }
}
