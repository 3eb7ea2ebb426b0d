/** The reward-function signature shared by built-in and user scorers. */

/** What a scorer returns: a number, or a dict with `score` and extra logged columns. */
export type ScoreValue = number | { score: number; [extra: string]: unknown };

/** verl's `compute_score(data_source, solution_str, ground_truth, extra_info)`. */
export type ComputeScore = (
  dataSource: string,
  solutionStr: string,
  groundTruth: string,
  extraInfo?: unknown,
  rewardKwargs?: Record<string, unknown>,
) => ScoreValue | Promise<ScoreValue>;

/** One sample handed to a scorer. */
export interface ScoreRequest {
  dataSource: string;
  solution: string;
  groundTruth: string;
  extraInfo?: unknown;
}

/**
 * Why a sample got no usable score: the function threw or returned no number (`error`), ran over
 * its time (`timeout`), touched the network or disk (`permission_denied`), returned NaN/Inf
 * (`non_finite`), killed its worker (`crash`: Deno.exit, close(), an uncaught error), or was
 * never run because the batch's time budget was spent (`skipped`).
 */
export type FailureKind =
  | "error"
  | "timeout"
  | "permission_denied"
  | "non_finite"
  | "crash"
  | "skipped";

/** The result of scoring one sample: a value, or a failure with its reason. */
export type ScoreOutcome =
  | { ok: true; value: unknown }
  | { ok: false; kind: FailureKind; message: string };

/** Anything that scores a batch of samples (in process, or in a sandboxed worker). */
export interface BatchScorer {
  scoreBatch(samples: ScoreRequest[]): Promise<ScoreOutcome[]>;
  close(): void;
}
