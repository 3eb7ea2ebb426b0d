/** `defaultComputeScore`: the built-in scorer for each known data_source. */
import { ARITHMETIC_DATA_SOURCE, arithmeticScore, CALC_TOOL_DATA_SOURCE } from "./arithmetic.ts";
import { gsm8kScore } from "./gsm8k.ts";
import { mathScore } from "./math.ts";
import { QA_DATA_SOURCES, qaEmScore } from "./qa_em.ts";
import type { ScoreValue } from "./types.ts";

type Scorer = (solution: string, groundTruth: string, extraInfo?: unknown) => ScoreValue;

const SCORERS: Record<string, Scorer> = {
  "openai/gsm8k": (s, gt) => gsm8kScore(s, gt),
  "lighteval/MATH": (s, gt) => mathScore(s, gt),
  "DigitalLearningGmbH/MATH-lighteval": (s, gt) => mathScore(s, gt),
  "HuggingFaceH4/MATH-500": (s, gt) => mathScore(s, gt),
  [ARITHMETIC_DATA_SOURCE]: (s, gt) => arithmeticScore(s, gt),
  [CALC_TOOL_DATA_SOURCE]: (s, gt) => arithmeticScore(s, gt),
  ...Object.fromEntries(
    QA_DATA_SOURCES.map((d) => [d, (s: string, gt: string) => qaEmScore(s, gt)]),
  ),
};

/** data_source values with a built-in scorer. */
export const KNOWN_DATA_SOURCES: readonly string[] = Object.keys(SCORERS);

/** Thrown for a data_source without a built-in scorer. */
export class UnknownDataSourceError extends Error {
  constructor(readonly dataSource: string) {
    super(
      `no built-in reward for data_source "${dataSource}"; known: ${
        KNOWN_DATA_SOURCES.join(", ")
      } (or set custom_reward_function.path)`,
    );
    this.name = "UnknownDataSourceError";
  }
}

/** verl's `default_compute_score`: dispatches on data_source. */
export function defaultComputeScore(
  dataSource: string,
  solutionStr: string,
  groundTruth: string,
  extraInfo?: unknown,
): ScoreValue {
  const scorer = Object.hasOwn(SCORERS, dataSource) ? SCORERS[dataSource] : undefined;
  if (!scorer) throw new UnknownDataSourceError(dataSource);
  return scorer(solutionStr, String(groundTruth), extraInfo);
}
