/**
 * MATH-style scoring: take the last `\boxed{...}` (or `\fbox{...}`) of the response, normalise
 * both it and the ground truth the way verl's `math` reward does, and compare.
 */

/** The content of the last `\boxed{...}` / `\fbox{...}` / `\boxed x`, braces balanced; or null. */
export function lastBoxed(text: string): string | null {
  const at = Math.max(text.lastIndexOf("\\boxed"), text.lastIndexOf("\\fbox"));
  if (at < 0) return null;
  let i = at + (text.startsWith("\\boxed", at) ? 6 : 5);
  if (text[i] === " ") {
    // `\boxed 5$`: the argument runs to the closing dollar or the end.
    const rest = text.slice(i + 1);
    const end = rest.indexOf("$");
    return (end < 0 ? rest : rest.slice(0, end)).trim();
  }
  if (text[i] !== "{") return null;
  let depth = 0;
  const start = i + 1;
  for (; i < text.length; i++) {
    if (text[i] === "{") depth++;
    else if (text[i] === "}" && --depth === 0) return text.slice(start, i);
  }
  return null; // unbalanced: the response was cut off inside the box
}

/** Options of the MATH comparison. */
export interface MathOptions {
  /** Treat numerically equal simple numbers as equal (`0.5` = `\frac{1}{2}` = `1/2`). */
  numericEquivalence?: boolean;
}

/** Canonical text of an answer: what two equal answers should share. */
export function normalizeMathAnswer(answer: string): string {
  let s = answer.replace(/\n/g, "").replace(/\\!/g, "");
  s = s.replace(/\\\\/g, "\\").replace(/\\[td]frac/g, "\\frac");
  s = s.replace(/\\left|\\right|\\displaystyle/g, "");
  s = s.replace(/\^\{\\circ\}|\^\\circ/g, "");
  s = s.replace(/\\\$|\$/g, "");
  s = s.replace(/\\[,;: ]/g, "");
  // A trailing \text{...}/\mbox{...} after a value is a unit ("10\text{ cm}"); elsewhere unwrap.
  s = s.replace(/(.+?)\s*\\(?:text|mbox)\{[^{}]*\}\s*$/, "$1");
  s = s.replace(/\\(?:text|textbf|mbox|mathrm)\{([^{}]*)\}/g, "$1");
  s = s.replace(/\\%|%/g, "");
  s = s.replace(/ \./g, " 0.").replace(/\{\./g, "{0.");
  if (s.startsWith(".")) s = "0" + s;
  // "x = 5" -> "5" when the left side is a short variable name.
  const eq = s.split("=");
  if (eq.length === 2 && eq[0].trim().length <= 2) s = eq[1];
  s = s.replace(/\\sqrt(\w)/g, "\\sqrt{$1}");
  s = s.replace(/\s+/g, "");
  s = s.replace(/\\frac(\d)(\d)/g, "\\frac{$1}{$2}").replace(/\\frac(\d)\{/g, "\\frac{$1}{");
  s = s.replace(/\\frac\{([^{}]+)\}(\d)/g, "\\frac{$1}{$2}");
  const slash = /^(-?\d+)\/(\d+)$/.exec(s);
  if (slash) s = `\\frac{${slash[1]}}{${slash[2]}}`;
  s = s.replace(/\.$/, "");
  return s;
}

/** The value of a plain number, decimal or `\frac{a}{b}`, or NaN. */
function numericValue(s: string): number {
  if (/^-?\d+(\.\d+)?$/.test(s)) return Number(s);
  const m = /^(-?)\\frac\{(-?\d+(?:\.\d+)?)\}\{(\d+(?:\.\d+)?)\}$/.exec(s);
  return m ? (m[1] ? -1 : 1) * Number(m[2]) / Number(m[3]) : NaN;
}

/** Whether two answers agree after normalisation. */
export function mathEquivalent(a: string, b: string, o: MathOptions = {}): boolean {
  const x = normalizeMathAnswer(a), y = normalizeMathAnswer(b);
  if (x === y) return true;
  if (o.numericEquivalence ?? true) {
    const u = numericValue(x), v = numericValue(y);
    if (Number.isFinite(u) && Number.isFinite(v)) {
      return Math.abs(u - v) <= 1e-9 * Math.max(1, Math.abs(u), Math.abs(v));
    }
  }
  return false;
}

/** 1.0 when the last boxed answer matches the ground truth, else 0.0. */
export function mathScore(solution: string, groundTruth: string, o: MathOptions = {}): number {
  const boxed = lastBoxed(solution);
  if (boxed === null) return 0;
  // Ground truths are sometimes stored with their own \boxed{}.
  const truth = lastBoxed(groundTruth) ?? groundTruth;
  return mathEquivalent(boxed, truth, o) ? 1.0 : 0.0;
}
