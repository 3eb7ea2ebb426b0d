/**
 * Engine results laid out as `generate`'s rows: each response's tokens then pad, its mask 1
 * through the last token (the EOS included) and 0 after, its log-probs 0 there.
 */
import type { EngineResult } from "./engine_types.ts";

export interface ResponseRows {
  responses: Int32Array; // [N, R]
  responseMask: Int32Array; // [N, R]
  /** Present when asked for: each row's log-probs (0 after its last token). */
  logProbs?: Float32Array; // [N, R]
}

/** Rows of `results` (one row each, in order) at `responseLength` R. */
export function responseRows(
  results: EngineResult[],
  o: { responseLength: number; padTokenId: number; logProbs: boolean },
): ResponseRows {
  const N = results.length, R = o.responseLength;
  const responses = new Int32Array(N * R).fill(o.padTokenId); // [N, R]
  const responseMask = new Int32Array(N * R); // [N, R]
  const logProbs = o.logProbs ? new Float32Array(N * R) : undefined; // [N, R]
  results.forEach((r, i) => {
    if (r.tokens.length > R) {
      throw new Error(`responseRows: result ${i} has ${r.tokens.length} tokens, more than ${R}`);
    }
    responses.set(r.tokens, i * R);
    responseMask.fill(1, i * R, i * R + r.tokens.length);
    if (!logProbs) return;
    if (!r.logProbs) throw new Error(`responseRows: result ${i} has no log-probs`);
    logProbs.set(r.logProbs, i * R);
  });
  return { responses, responseMask, logProbs };
}
