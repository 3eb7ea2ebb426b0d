/**
 * Search-R1's exact-match reward (qa_em): the last `<answer>...</answer>` of the response,
 * normalized (lowercase, punctuation removed, the articles a/an/the removed, whitespace collapsed),
 * equals one of the normalized golden answers: `score` (1.0), else `format_score` (0.0); no answer
 * tag: 0. As verl's search_r1_like_qa_em, more than 10 opening or closing answer tags divide a
 * correct answer's score by 4. The solution is the response alone, so one answer tag is enough
 * (Search-R1's original scored prompt + response, whose prompt held an example tag).
 *
 * The ground truth is Search-R1's `{"target": [answers]}` (a struct in the parquet, JSON text
 * here), a JSON list of answers, or one answer as plain text.
 */

/** The synthetic knowledge-base task (`deno task data --task search`). */
export const SEARCH_SYNTH_DATA_SOURCE = "searchR1_synth";

/** data_source values scored by exact match: Search-R1's names, and verl's `searchR1_` ones. */
export const QA_DATA_SOURCES: readonly string[] = [
  "nq",
  "triviaqa",
  "popqa",
  "hotpotqa",
  "2wikimultihopqa",
  "musique",
  "bamboogle",
].flatMap((s) => [s, `searchR1_${s}`]).concat([SEARCH_SYNTH_DATA_SOURCE]);

/** Python's string.punctuation. */
const PUNCTUATION = new Set([..."!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"]);

/** Search-R1's normalize_answer. */
export function normalizeAnswer(s: string): string {
  const lower = s.toLowerCase();
  const noPunc = [...lower].filter((c) => !PUNCTUATION.has(c)).join("");
  // Python's \b is Unicode-aware: a word character is a letter, a digit or "_".
  const noArticles = noPunc.replace(/(?<![\p{L}\p{N}_])(a|an|the)(?![\p{L}\p{N}_])/gu, " ");
  return noArticles.split(/\s+/u).filter((w) => w !== "").join(" ");
}

/** The golden answers of a ground truth (see the module doc). */
export function goldenAnswers(groundTruth: string): string[] {
  let v: unknown;
  try {
    v = JSON.parse(groundTruth);
  } catch {
    return [groundTruth];
  }
  if (typeof v === "object" && v !== null && !Array.isArray(v) && "target" in v) {
    v = (v as { target: unknown }).target;
  }
  if (Array.isArray(v)) return v.map(String);
  return [typeof v === "string" ? v : groundTruth];
}

/** The last `<answer>` tag's stripped text, or null. */
export function extractAnswer(solution: string): string | null {
  const matches = [...solution.matchAll(/<answer>([\s\S]*?)<\/answer>/g)];
  return matches.length ? matches[matches.length - 1][1].trim() : null;
}

export function qaEmScore(
  solution: string,
  groundTruth: string,
  o: { formatScore?: number; score?: number } = {},
): number {
  const answer = extractAnswer(solution);
  if (answer === null) return 0;
  const pred = normalizeAnswer(answer);
  if (!goldenAnswers(groundTruth).some((g) => normalizeAnswer(g) === pred)) {
    return o.formatScore ?? 0;
  }
  const score = o.score ?? 1;
  const opens = solution.split("<answer>").length - 1;
  const closes = solution.split("</answer>").length - 1;
  return opens > 10 || closes > 10 ? score / 4 : score;
}
