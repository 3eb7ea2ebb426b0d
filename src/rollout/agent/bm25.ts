/**
 * In-process BM25 over a corpus of `{id, contents}` passages (Search-R1's corpus rows; the first
 * line of `contents` is the title). Scoring is Okapi BM25 with Lucene's idf,
 *   idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)),
 *   score(d, q) = sum over query terms t of idf(t) * tf (k1 + 1) / (tf + k1 (1 - b + b |d| / avgdl)),
 * with Pyserini's defaults k1 = 0.9, b = 0.4 (Search-R1's BM25 retriever). Terms are lowercase
 * runs of letters and digits.
 */

export interface Passage {
  id: string;
  contents: string;
}

export interface Hit {
  passage: Passage;
  score: number;
}

export function terms(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

export class Bm25Index {
  private readonly postings = new Map<string, { doc: number; tf: number }[]>();
  private readonly lengths: Int32Array;
  private readonly avgdl: number;

  constructor(
    readonly passages: readonly Passage[],
    readonly k1 = 0.9,
    readonly b = 0.4,
  ) {
    this.lengths = new Int32Array(passages.length);
    let total = 0;
    passages.forEach((p, doc) => {
      const counts = new Map<string, number>();
      const ts = terms(p.contents);
      for (const t of ts) counts.set(t, (counts.get(t) ?? 0) + 1);
      for (const [t, tf] of counts) {
        let list = this.postings.get(t);
        if (!list) this.postings.set(t, list = []);
        list.push({ doc, tf });
      }
      this.lengths[doc] = ts.length;
      total += ts.length;
    });
    this.avgdl = passages.length ? total / passages.length : 0;
  }

  /** The `k` best passages for `query`, best first; ties keep corpus order. */
  search(query: string, k: number): Hit[] {
    const N = this.passages.length;
    const scores = new Map<number, number>();
    for (const t of new Set(terms(query))) {
      const list = this.postings.get(t);
      if (!list) continue;
      const idf = Math.log(1 + (N - list.length + 0.5) / (list.length + 0.5));
      for (const { doc, tf } of list) {
        const norm = this.k1 * (1 - this.b + this.b * this.lengths[doc] / this.avgdl);
        scores.set(doc, (scores.get(doc) ?? 0) + idf * tf * (this.k1 + 1) / (tf + norm));
      }
    }
    return [...scores].sort((x, y) => y[1] - x[1] || x[0] - y[0]).slice(0, k)
      .map(([doc, score]) => ({ passage: this.passages[doc], score }));
  }
}

/** Reads a JSONL corpus of `{id, contents}` rows; a bad line is an error naming file and line. */
export function parseCorpus(text: string, file: string): Passage[] {
  const out: Passage[] = [];
  text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch (e) {
      throw new Error(`${file}:${i + 1}: not valid JSON (${(e as Error).message})`);
    }
    const r = row as Record<string, unknown>;
    if (typeof r?.contents !== "string") {
      throw new Error(`${file}:${i + 1}: expected {"id": ..., "contents": "..."}`);
    }
    out.push({ id: String(r.id ?? out.length), contents: r.contents });
  });
  return out;
}
