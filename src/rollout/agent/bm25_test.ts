import assert from "node:assert/strict";
import { Bm25Index, parseCorpus, terms } from "./bm25.ts";
import { passagesText } from "./search_tool.ts";

const CORPUS = [
  { id: "0", contents: "Paris\nParis is the capital of France." },
  { id: "1", contents: "Berlin\nBerlin is the capital of Germany. Germany borders France." },
  { id: "2", contents: "Cheese\nFrance makes cheese, cheese and more cheese." },
  { id: "3", contents: "Rome\nRome is in Italy." },
];

/** BM25 written out for one document, as the module doc states it. */
function reference(docs: string[][], query: string[], d: number, k1 = 0.9, b = 0.4): number {
  const N = docs.length, avg = docs.reduce((a, x) => a + x.length, 0) / N;
  let s = 0;
  for (const t of new Set(query)) {
    const df = docs.filter((x) => x.includes(t)).length;
    if (df === 0) continue;
    const tf = docs[d].filter((x) => x === t).length;
    const idf = Math.log(1 + (N - df + 0.5) / (df + 0.5));
    s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * docs[d].length / avg));
  }
  return s;
}

Deno.test("BM25 ranks a tiny corpus as the formula does", () => {
  const index = new Bm25Index(CORPUS);
  const docs = CORPUS.map((p) => terms(p.contents));
  for (const q of ["capital of France", "cheese", "Germany capital", "italy rome"]) {
    const hits = index.search(q, 4);
    const want = docs.map((_, d) => ({ d, s: reference(docs, terms(q), d) }))
      .filter((x) => x.s > 0).sort((x, y) => y.s - x.s || x.d - y.d);
    assert.deepEqual(hits.map((h) => h.passage.id), want.map((x) => String(x.d)), q);
    hits.forEach((h, i) => assert.ok(Math.abs(h.score - want[i].s) < 1e-9));
  }
  assert.equal(index.search("cheese", 1)[0].passage.id, "2");
  assert.equal(index.search("capital france", 1)[0].passage.id, "0");
  assert.deepEqual(index.search("tokyo", 3), []);
});

Deno.test("corpus JSONL: bad lines name the file and line; passages format as verl's", () => {
  assert.deepEqual(parseCorpus('{"id": 1, "contents": "a\\nb"}\n\n', "c.jsonl"), [
    { id: "1", contents: "a\nb" },
  ]);
  assert.throws(() => parseCorpus('{"id": 1}\n', "c.jsonl"), /c\.jsonl:1: expected/);
  assert.throws(() => parseCorpus("ok\n", "c.jsonl"), /c\.jsonl:1: not valid JSON/);
  assert.equal(
    passagesText([{ contents: "T1\nbody one" }, { contents: "T2\nline\nline2" }]),
    "Doc 1 (Title: T1)\nbody one\n\nDoc 2 (Title: T2)\nline\nline2",
  );
});
