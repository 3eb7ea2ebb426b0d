/// <reference lib="dom" />
/** The table of recent prompts, answers and scores, newest first. */
import type { SampleRow } from "./protocol.ts";

/** Role markers and padding make prompts hard to read; show the user's text only. */
function promptText(input: string): string {
  return input.replace(/<\|[a-z_]+\|>|<eos>|<pad>|<bos>/g, " ").replace(/\s+/g, " ").trim();
}

export class SamplesTable {
  #rows = 0;
  readonly #empty: HTMLTableRowElement | null;

  constructor(readonly body: HTMLTableSectionElement, readonly options: { keep: number }) {
    this.#empty = body.querySelector("tr.empty-row");
  }

  get size(): number {
    return this.#rows;
  }

  clear(): void {
    this.body.replaceChildren(...(this.#empty ? [this.#empty] : []));
    this.#rows = 0;
  }

  add(kind: "train" | "val", step: number, rows: SampleRow[]): void {
    this.#empty?.remove();
    const frag = document.createDocumentFragment();
    for (const r of rows) {
      const tr = document.createElement("tr");
      tr.className = kind;
      const cells: [string, string][] = [
        [String(step), ""],
        [kind === "val" ? "held out" : "train", ""],
        [promptText(r.input), "text"],
        [r.output.replaceAll("\n", "\u21b5"), "text"],
        [r.ground_truth, "text"],
        [r.score.toFixed(2), `score ${r.score > 0 ? "good" : "bad"}`],
      ];
      for (const [text, cls] of cells) {
        const td = document.createElement("td");
        td.textContent = text;
        if (cls) td.className = cls;
        tr.append(td);
      }
      frag.append(tr);
    }
    this.body.prepend(frag);
    while (this.body.rows.length > this.options.keep) this.body.deleteRow(-1);
    this.#rows = this.body.rows.length;
  }
}
