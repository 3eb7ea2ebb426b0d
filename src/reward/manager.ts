/**
 * verl's "naive" reward manager: one compute_score call per sample, the score placed on the
 * sample's last valid response token. Every failure is reported with its sample and counted in
 * the metrics; a failed sample scores 0 but never silently.
 */
import type { Tokenizer } from "../io/mod.ts";
import { defaultComputeScore } from "./default_score.ts";
import { InProcessScorer } from "./in_process.ts";
import { SandboxedRewardFunction } from "./sandbox.ts";
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
  /** Extra keys of dict returns, one column per key (null where a sample lacks it). */
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
      for (const [k, v] of Object.entries(parsed.extra)) {
        (extra[k] ??= new Array(B).fill(null))[b] = v;
      }
    });
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

/** A number, a boolean (Python bools are ints) or `{score, ...extra}`; else an error text. */
function parseValue(v: unknown): { score: number; extra: Record<string, unknown> } | string {
  if (typeof v === "number") return { score: v, extra: {} };
  if (typeof v === "boolean") return { score: v ? 1 : 0, extra: {} };
  if (typeof v === "object" && v !== null && !Array.isArray(v)) {
    const { score, ...extra } = v as Record<string, unknown>;
    if (typeof score === "boolean") return { score: score ? 1 : 0, extra };
    if (typeof score !== "number") {
      return `returned a dict without a numeric "score" (keys: ${Object.keys(v).join(", ")})`;
    }
    return { score, extra };
  }
  return `returned ${JSON.stringify(v) ?? String(v)} instead of a number or {score, ...}`;
}

function snippet(s: string, keep = 60): string {
  return s.length <= 2 * keep + 5 ? s : `${s.slice(0, keep)} ... ${s.slice(-keep)}`;
}

/** The reward settings the manager reads from a trainer or evaluator config. */
export interface CustomRewardConfig {
  path: string | null;
  name: string;
  reward_kwargs: Record<string, unknown>;
  timeout_s: number;
  /** Time budget of one scoring call (a step's batch); null or absent = none. */
  batch_timeout_s?: number | null;
}

/** The manager a config asks for: a sandboxed user function, or the built-in scorers. */
export async function createRewardManager(
  cfg: { custom_reward_function: CustomRewardConfig },
  opts: Omit<RewardManagerOptions, "scorer"> = {},
): Promise<RewardManager> {
  const c = cfg.custom_reward_function;
  if (c.path === null) return new RewardManager(opts);
  const scorer = await SandboxedRewardFunction.load(c.path, {
    name: c.name,
    timeoutS: c.timeout_s,
    batchTimeoutS: c.batch_timeout_s ?? null,
    rewardKwargs: c.reward_kwargs,
  });
  return new RewardManager({ ...opts, scorer });
}
