/**
 * GSM8K scoring with verl's rule (verl/utils/reward_score/gsm8k.py): only the last 300 characters
 * are searched, the final answer is found by a regular expression, and it is compared to the
 * ground truth as a string.
 *
 * - strict: every `#### ` followed by an optional `-` and a run of digits, `.` and `,`; the last
 *   one, with commas removed. `#### $45` has no match (a `$` may not follow `#### `), nor has
 *   `####45` (no space) or `#### ` followed by a second space.
 * - flexible: every run of an optional `-` and digits, `.` and `,`; the last one that is neither
 *   "" nor "." — nothing is stripped, so `42.` (a sentence's period) and `1,234` stay as they are.
 *   When every run is "." the scan ends without a pick and the first run, ".", is the answer.
 *
 * The answer equals the ground truth exactly (no trimming, no number parsing): `score` (1.0);
 * an answer that differs: `format_score` (0.0); no answer at all: 0.
 */

/** Only the tail is searched: the answer sits at the end, and regexes over long text are slow. */
export const SOLUTION_CLIP_CHARS = 300;

/** strict: the last `#### <number>`; flexible: the last number anywhere in the tail. */
export type Gsm8kMethod = "strict" | "flexible";

const STRICT = /#### (-?[0-9.,]+)/g;
const FLEXIBLE = /-?[0-9.,]+/g;

/** The last `n` characters counted as Python counts them (code points, not UTF-16 units). */
function lastChars(s: string, n: number): string {
  if (s.length <= n) return s; // UTF-16 length >= code points: nothing to clip
  const points = Array.from(s);
  return points.length > n ? points.slice(-n).join("") : s;
}

/** The final answer of a response (strict: commas removed), or null when there is none. */
export function extractGsm8kAnswer(
  solution: string,
  method: Gsm8kMethod = "strict",
): string | null {
  const tail = lastChars(solution, SOLUTION_CLIP_CHARS);
  if (method === "strict") {
    const matches = [...tail.matchAll(STRICT)];
    if (matches.length === 0) return null;
    return matches[matches.length - 1][1].replaceAll(",", "");
  }
  const runs = tail.match(FLEXIBLE) ?? [];
  if (runs.length === 0) return null;
  for (let i = runs.length - 1; i >= 0; i--) {
    if (runs[i] !== "" && runs[i] !== ".") return runs[i];
  }
  return runs[0]!;
}

/** Options of `gsm8kScore`, named as in verl. */
export interface Gsm8kOptions {
  method?: Gsm8kMethod;
  /** Reward for a found but wrong answer (format_score; a response with no answer gets 0). */
  formatScore?: number;
  /** Reward for a correct answer (score). */
  score?: number;
}

/** `score` if the extracted answer equals the ground truth, `formatScore` if not, 0 if none. */
export function gsm8kScore(solution: string, groundTruth: string, o: Gsm8kOptions = {}): number {
  const answer = extractGsm8kAnswer(solution, o.method ?? "strict");
  if (answer === null) return 0;
  return answer === groundTruth ? (o.score ?? 1.0) : (o.formatScore ?? 0.0);
}
