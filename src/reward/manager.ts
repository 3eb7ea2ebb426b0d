/**
 * verl's "naive" and "dapo" reward managers: one compute_score call per sample, the score placed
 * on the sample's last valid response token. "dapo" also records a plain number's score as the
 * `acc` column of reward_extra_info (the column DAPO's group filter reads) and adds the overlong
 * penalty (overlong.ts) when `overlongBuffer` is set. Every failure is reported with its sample and
 * counted in the metrics; a failed sample scores 0 but never silently.
 */
import type { Tokenizer } from "../io/mod.ts";
import { defaultComputeScore } from "./default_score.ts";
import { checkOverlongBuffer, type OverlongBuffer, overlongPenalty } from "./overlong.ts";
import { InProcessScorer } from "./in_process.ts";
import type { BatchScorer, FailureKind, ScoreRequest } from "./types.ts";

/** One batch to score. Shapes: B samples, R response positions (right-padded). */
export interface RewardBatch {
  /** Decoded responses; when absent they are decoded from responseIds with the tokenizer. */
  responses?: string[];
  /** Response token ids, [B*R] row-major. */
  responseIds?: ArrayLike<number>;
  /** 1 where the policy generated the token, [B*R]. */
  responseMask: ArrayLike<number>;
  /** R. */
  responseLength: number;
  dataSources: string[];
  groundTruths: string[];
  extraInfos?: unknown[];
}

/** A sample that got no usable score. */
export interface RewardFailure {
  index: number;
  dataSource: string;
  kind: FailureKind;
  message: string;
  /** Start and end of the response, for the log. */
  snippet: string;
}

export interface RewardResult {
  /** [B*R]: each sample's score at its last valid response token, 0 elsewhere. */
  tokenLevelScores: Float32Array;
  /** [B]: the score of each sample (0 for a failed one). */
  scores: Float32Array;
  /**
   * The keys of dict returns (score included), one column per key (null where a sample lacks
   * it); the "dapo" manager adds `acc` for plain numbers and, with overlong_buffer.log, the
   * `overlong_reward` and `overlong` columns.
   */
  rewardExtraInfo: Record<string, unknown[]>;
  responses: string[];
  failures: RewardFailure[];
  /**
   * reward/errors, reward/timeouts, reward/permission_denied, reward/non_finite, reward/crashes,
   * reward/skipped, their sum reward/failed, and reward/empty_response.
   */
  metrics: Record<string, number>;
}

export interface RewardManagerOptions {
  /** Defaults to the built-in scorers (`defaultComputeScore`) run in process. */
  scorer?: BatchScorer;
  /** Needed when batches carry token ids instead of strings. */
  tokenizer?: Tokenizer;
  /** Where failure reports go; default console.warn. */
  log?: (line: string) => void;
  /** Failures printed per batch before the rest are summarised. */
  maxReports?: number;
  /** reward_model.reward_manager: "naive" (default) or "dapo" */
  manager?: "naive" | "dapo";
  /** reward_model.overlong_buffer when enabled (the "dapo" manager only) */
  overlongBuffer?: OverlongBuffer | null;
}

const METRIC: Record<FailureKind, string> = {
  error: "reward/errors",
  timeout: "reward/timeouts",
  permission_denied: "reward/permission_denied",
  non_finite: "reward/non_finite",
  crash: "reward/crashes",
  skipped: "reward/skipped",
};

export class RewardManager {
  readonly scorer: BatchScorer;
  #opts: RewardManagerOptions;

  constructor(opts: RewardManagerOptions = {}) {
    if (opts.overlongBuffer) {
      if (opts.manager !== "dapo") {
        throw new Error(
          "reward_model.overlong_buffer is applied by the dapo reward manager: set " +
            "reward_model.reward_manager=dapo",
        );
      }
      checkOverlongBuffer(opts.overlongBuffer);
    }
    this.scorer = opts.scorer ?? new InProcessScorer(defaultComputeScore);
    this.#opts = opts;
  }

  /** Scores one batch. */
  async score(batch: RewardBatch): Promise<RewardResult> {
    const R = batch.responseLength;
    const B = batch.dataSources.length;
    const lastValid = new Int32Array(B).fill(-1);
    for (let b = 0; b < B; b++) {
      for (let t = R - 1; t >= 0; t--) {
        if (batch.responseMask[b * R + t]) {
          lastValid[b] = t;
          break;
        }
      }
    }
    const responses = batch.responses ?? this.#decode(batch, lastValid);
    const requests: ScoreRequest[] = responses.map((solution, b) => ({
      dataSource: batch.dataSources[b],
      solution,
      groundTruth: batch.groundTruths[b],
      extraInfo: batch.extraInfos?.[b],
    }));
    const outcomes = await this.scorer.scoreBatch(requests);

    const scores = new Float32Array(B);
    const tokenLevelScores = new Float32Array(B * R);
    const extra: Record<string, unknown[]> = {};
    const failures: RewardFailure[] = [];
    const metrics: Record<string, number> = {
      ...Object.fromEntries(Object.values(METRIC).map((k) => [k, 0])),
      "reward/failed": 0,
      "reward/empty_response": 0,
    };
    const fail = (b: number, kind: FailureKind, message: string) => {
      failures.push({
        index: b,
        dataSource: requests[b].dataSource,
        kind,
        message,
        snippet: snippet(responses[b]),
      });
      metrics[METRIC[kind]]++;
      metrics["reward/failed"]++;
    };
    outcomes.forEach((o, b) => {
      if (!o.ok) return fail(b, o.kind, o.message);
      const parsed = parseValue(o.value);
      if (typeof parsed === "string") return fail(b, "error", parsed);
      if (!Number.isFinite(parsed.score)) {
        return fail(b, "non_finite", `returned a non-finite score (${parsed.score})`);
      }
      scores[b] = parsed.score;
      // verl logs every key of a dict return, score included; "dapo" logs a number as acc
      const columns = parsed.dict
        ? { score: parsed.score, ...parsed.extra }
        : this.#opts.manager === "dapo"
        ? { acc: parsed.score }
        : {};
      for (const [k, v] of Object.entries(columns)) {
        (extra[k] ??= new Array(B).fill(null))[b] = v;
      }
    });
    const ob = this.#opts.overlongBuffer;
    if (ob) Object.assign(metrics, applyOverlong(ob, lastValid, scores, extra));
    for (let b = 0; b < B; b++) {
      if (lastValid[b] < 0) metrics["reward/empty_response"]++;
      else tokenLevelScores[b * R + lastValid[b]] = scores[b];
    }
    this.#report(failures);
    return { tokenLevelScores, scores, rewardExtraInfo: extra, responses, failures, metrics };
  }

  #decode(batch: RewardBatch, lastValid: Int32Array): string[] {
    const { tokenizer } = this.#opts;
    if (!batch.responseIds || !tokenizer) {
      throw new Error("RewardManager.score needs responses, or responseIds and a tokenizer");
    }
    const R = batch.responseLength;
    return Array.from(lastValid, (last, b) => {
      const ids = Array.from({ length: last + 1 }, (_, t) => batch.responseIds![b * R + t]);
      return tokenizer.decode(ids, { skipSpecialTokens: true });
    });
  }

  #report(failures: RewardFailure[]): void {
    const log = this.#opts.log ?? ((line: string) => console.warn(line));
    const max = this.#opts.maxReports ?? 5;
    for (const f of failures.slice(0, max)) {
      log(
        `reward ${f.kind} for sample ${f.index} (data_source=${f.dataSource}): ${f.message}; ` +
          `response: ${JSON.stringify(f.snippet)}`,
      );
    }
    if (failures.length > max) log(`reward: ${failures.length - max} more failures in this batch`);
  }

  close(): void {
    this.scorer.close();
  }
}

/**
 * Adds the overlong penalty of each response (its length: up to its last valid token, as verl's
 * attention-mask count) to its score; with `log`, the `overlong_reward` and `overlong` columns and
 * their batch means as metrics.
 */
function applyOverlong(
  ob: OverlongBuffer,
  lastValid: Int32Array,
  scores: Float32Array,
  extra: Record<string, unknown[]>,
): Record<string, number> {
  const B = scores.length, penalties = new Array<number | null>(B).fill(null);
  for (let b = 0; b < B; b++) {
    if (lastValid[b] < 0) continue;
    penalties[b] = overlongPenalty(lastValid[b] + 1, ob);
    scores[b] += penalties[b]!;
  }
  if (!ob.log) return {};
  extra.overlong_reward = penalties;
  extra.overlong = penalties.map((p) => (p === null ? null : p < 0 ? 1 : 0));
  const valid = penalties.filter((p) => p !== null);
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, x) => a + x, 0) / xs.length : 0);
  return {
    "reward/overlong_reward/mean": mean(valid),
    "reward/overlong/mean": mean(valid.map((p) => (p < 0 ? 1 : 0))),
  };
}

/** A number, a boolean (Python bools are ints) or `{score, ...extra}`; else an error text. */
function parseValue(
  v: unknown,
): { score: number; extra: Record<string, unknown>; dict: boolean } | string {
  if (typeof v === "number") return { score: v, extra: {}, dict: false };
  if (typeof v === "boolean") return { score: v ? 1 : 0, extra: {}, dict: false };
  if (typeof v === "object" && v !== null && !Array.isArray(v)) {
    const { score, ...extra } = v as Record<string, unknown>;
    if (typeof score === "boolean") return { score: score ? 1 : 0, extra, dict: true };
    if (typeof score !== "number") {
      return `returned a dict without a numeric "score" (keys: ${Object.keys(v).join(", ")})`;
    }
    return { score, extra, dict: true };
  }
  return `returned ${JSON.stringify(v) ?? String(v)} instead of a number or {score, ...}`;
}

function snippet(s: string, keep = 60): string {
  return s.length <= 2 * keep + 5 ? s : `${s.slice(0, keep)} ... ${s.slice(-keep)}`;
}
