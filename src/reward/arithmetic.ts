/**
 * Scorer of the synthetic arithmetic task (data_source `synthetic/arithmetic`). The expected
 * response is `#### <answer>` (e.g. prompt `12+7=`, response `#### 19`), read with gsm8k's strict
 * extraction, so the format rule a model learns here carries over to gsm8k.
 */
import { gsm8kScore } from "./gsm8k.ts";

/** Data sources the synthetic generator writes. */
export const ARITHMETIC_DATA_SOURCE = "synthetic/arithmetic";
/** The calculator task (`deno task data --task calc_tool`): the same `#### n` rule. */
export const CALC_TOOL_DATA_SOURCE = "synthetic/calc_tool";

/** 1.0 when the last `#### n` equals the ground truth, else 0.0. */
export function arithmeticScore(solution: string, groundTruth: string): number {
  return gsm8kScore(solution, groundTruth, { method: "strict", score: 1.0, formatScore: 0.0 });
}
