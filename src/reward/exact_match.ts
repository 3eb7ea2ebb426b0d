/**
 * Exact-match scoring: the whole response, trimmed, against the ground truth, trimmed. For tasks
 * whose answer is the response itself (a word, a label, a number with nothing around it), where
 * gsm8k's `#### n` rule or MATH's `\boxed{}` would score every plain answer 0.
 */

/** Options of the comparison. */
export interface ExactMatchOptions {
  /** Compare case-insensitively (default false). */
  ignoreCase?: boolean;
  /** Score of a match (default 1.0); anything else scores 0.0. */
  score?: number;
}

/** Collapses runs of whitespace and trims, so `"13\n"` and `" 13"` both read `13`. */
function normalise(text: string, ignoreCase: boolean): string {
  const t = text.replace(/\s+/g, " ").trim();
  return ignoreCase ? t.toLowerCase() : t;
}

/** `score` when the trimmed response equals the trimmed ground truth, else 0.0. */
export function exactMatchScore(
  solution: string,
  groundTruth: string,
  options: ExactMatchOptions = {},
): number {
  const ignoreCase = options.ignoreCase ?? false;
  return normalise(solution, ignoreCase) === normalise(String(groundTruth), ignoreCase)
    ? options.score ?? 1.0
    : 0.0;
}
