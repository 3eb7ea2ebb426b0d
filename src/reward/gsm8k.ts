/**
 * GSM8K scoring with verl's rule: look only at the end of the response, find the final answer
 * (`#### <number>` when strict, the last number when flexible), compare it as a string.
 */

/** Only the tail is searched: the answer sits at the end, and regexes over long text are slow. */
export const SOLUTION_CLIP_CHARS = 300;

/** strict: the last `#### <number>`; flexible: the last number anywhere in the tail. */
export type Gsm8kMethod = "strict" | "flexible";

const STRICT = /#### (\$?-?[0-9.,$]+)/g;
const FLEXIBLE = /-?[0-9.,$]+/g;

/** The final answer of a response with commas and `$` removed, or null when there is none. */
export function extractGsm8kAnswer(
  solution: string,
  method: Gsm8kMethod = "strict",
): string | null {
  const tail = solution.length > SOLUTION_CLIP_CHARS
    ? solution.slice(-SOLUTION_CLIP_CHARS)
    : solution;
  if (method === "strict") {
    const matches = [...tail.matchAll(STRICT)];
    if (matches.length === 0) return null;
    return clean(matches.at(-1)![1]);
  }
  const matches = tail.match(FLEXIBLE) ?? [];
  for (let i = matches.length - 1; i >= 0; i--) {
    // A sentence-final period is punctuation, not a decimal point ("... is 42.").
    const v = clean(matches[i]).replace(/\.$/, "");
    if (v !== "" && v !== "-" && /[0-9]/.test(v)) return v;
  }
  return null;
}

function clean(s: string): string {
  return s.replaceAll(",", "").replaceAll("$", "");
}

/** Options of `gsm8kScore`, named as in verl. */
export interface Gsm8kOptions {
  method?: Gsm8kMethod;
  /** Reward for a parsed but wrong answer (a response with no answer gets 0). */
  formatScore?: number;
  /** Reward for a correct answer. */
  score?: number;
}

/** `score` if the extracted answer equals the ground truth, `formatScore` if wrong, 0 if none. */
export function gsm8kScore(solution: string, groundTruth: string, o: Gsm8kOptions = {}): number {
  const answer = extractGsm8kAnswer(solution, o.method ?? "strict");
  if (answer === null) return 0;
  return answer === String(groundTruth).trim() ? (o.score ?? 1.0) : (o.formatScore ?? 0.0);
}
