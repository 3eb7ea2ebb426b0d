/// <reference lib="dom" />
/** The table of recent prompts, answers and scores, newest first. */
import type { SampleRow } from "./protocol.ts";

/** Role markers and padding make text hard to read; show the words only. */
export function withoutMarkers(text: string): string {
  return text.replace(/<\|[a-z_]+\|>|<eos>|<pad>|<bos>/g, " ").replace(/\s+/g, " ").trim();
}

/** A conversation's messages after the prompt, one line per message under its role. */
function conversationCell(td: HTMLTableCellElement, r: SampleRow): void {
  const messages = r.messages!;
  // The prompt's messages are in the prompt column; the rest is what the rollout added.
  const first = messages.findIndex((m) => m.role === "assistant");
  for (const m of messages.slice(first < 0 ? messages.length : first)) {
    const line = document.createElement("div");
    line.className = `turn ${m.role}`;
    const role = document.createElement("span");
    role.className = "role";
    role.textContent = m.role;
    line.append(role, document.createTextNode(m.content.replaceAll("\n", "\u21b5")));
    td.append(line);
  }
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
        [withoutMarkers(r.input), "text"],
        [r.messages ? "" : r.output.replaceAll("\n", "\u21b5"), "text"],
        [r.ground_truth, "text"],
        [r.score.toFixed(2), `score ${r.score > 0 ? "good" : "bad"}`],
      ];
      for (const [i, [text, cls]] of cells.entries()) {
        const td = document.createElement("td");
        td.textContent = text;
        if (cls) td.className = cls;
        if (i === 3 && r.messages) {
          td.classList.add("conversation");
          conversationCell(td, r);
        }
        tr.append(td);
      }
      frag.append(tr);
    }
    this.body.prepend(frag);
    while (this.body.rows.length > this.options.keep) this.body.deleteRow(-1);
    this.#rows = this.body.rows.length;
  }
}
