/// <reference lib="dom" />
/** The table of recent prompts, responses and scores, newest first. */
import type { GenerationRow } from "../src/trainer/mod.ts";

/** Role markers and padding make prompts hard to read; show the user's text only. */
function promptText(input: string): string {
  return input.replace(/<\|user\|>|<\|assistant\|>|<eos>|<pad>/g, "").trim();
}

export class SamplesTable {
  #rows = 0;

  constructor(readonly body: HTMLTableSectionElement, readonly options: { keep: number }) {}

  get size(): number {
    return this.#rows;
  }

  clear(): void {
    this.body.replaceChildren();
    this.#rows = 0;
  }

  add(kind: "train" | "val", step: number, rows: GenerationRow[]): void {
    const frag = document.createDocumentFragment();
    for (const r of rows) {
      const tr = document.createElement("tr");
      tr.className = kind;
      const cells: [string, string][] = [
        [String(step), ""],
        [kind, ""],
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
