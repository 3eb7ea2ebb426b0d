/**
 * verl's main_eval: score a parquet of generated responses and report the mean score per
 * data_source as `test_score/{data_source}` (each row's responses averaged first).
 */
import type { EvaluationConfig } from "../config/mod.ts";
import { DataError, readParquet } from "../data/mod.ts";
import {
  createRewardManager,
  type RewardManagerOptions,
  type RewardResult,
} from "../reward/mod.ts";

export interface EvaluationResult {
  /** `test_score/{data_source}` plus the reward failure counters. */
  metrics: Record<string, number>;
  rows: number;
  responses: number;
}

/** Scores every response of `cfg.data.path`. */
export async function evaluateResponses(
  cfg: EvaluationConfig,
  opts: Omit<RewardManagerOptions, "scorer"> = {},
): Promise<EvaluationResult> {
  const { path, response_key: rk, data_source_key: dk, reward_model_key: gk } = cfg.data;
  const rows = await readParquet(path, { required: [rk, dk, gk] });
  if (rows.length === 0) {
    throw new DataError(path, "the file has no rows, so there is nothing to score (data.path)");
  }
  const owner: number[] = [];
  const responses: string[] = [];
  const dataSources: string[] = [];
  const groundTruths: string[] = [];
  const extraInfos: unknown[] = [];
  rows.forEach((row, i) => {
    const rs = row[rk];
    if (!Array.isArray(rs) || rs.some((r) => typeof r !== "string")) {
      throw new DataError(
        path,
        `expected a list of response strings (as deno task generate writes), got ${show(rs)}`,
        i,
        rk,
      );
    }
    if (rs.length === 0) throw new DataError(path, "the list of responses is empty", i, rk);
    const ds = row[dk];
    if (typeof ds !== "string") throw new DataError(path, "expected a string", i, dk);
    const gt = (row[gk] as Record<string, unknown> | null)?.ground_truth;
    if (typeof gt !== "string" && typeof gt !== "number") {
      throw new DataError(path, "expected a struct with a ground_truth string", i, gk);
    }
    for (const r of rs as string[]) {
      owner.push(i);
      responses.push(r);
      dataSources.push(ds);
      groundTruths.push(String(gt));
      extraInfos.push(row.extra_info ?? null);
    }
  });
  const manager = await createRewardManager(cfg, opts);
  try {
    const result = await manager.score({
      responses,
      responseMask: new Uint8Array(responses.length).fill(1),
      responseLength: 1,
      dataSources,
      groundTruths,
      extraInfos,
    });
    const perRow = new Map<number, number[]>();
    owner.forEach((row, k) => perRow.set(row, [...(perRow.get(row) ?? []), result.scores[k]]));
    const bySource = new Map<string, number[]>();
    for (const [row, scores] of perRow) {
      const ds = rows[row][dk] as string;
      bySource.set(ds, [...(bySource.get(ds) ?? []), mean(scores)]);
    }
    const metrics: Record<string, number> = {};
    for (const [ds, s] of [...bySource].sort()) metrics[`test_score/${ds}`] = mean(s);
    for (const [k, v] of Object.entries(result.metrics)) metrics[k] = v;
    checkFailures(result, { owner, total: responses.length, path, cfg });
    return { metrics, rows: rows.length, responses: responses.length };
  } finally {
    manager.close();
  }
}

/**
 * An evaluation whose scores are mostly (more than data.max_failed_ratio) or all failures did
 * not happen: it throws, with the counts per kind and the first failures named by row.
 */
function checkFailures(
  result: RewardResult,
  o: { owner: number[]; total: number; path: string; cfg: EvaluationConfig },
): void {
  const failed = result.failures.length;
  const ratio = o.cfg.data.max_failed_ratio;
  if (failed === 0 || (failed < o.total && failed <= ratio * o.total)) return;
  const kinds = new Map<string, number>();
  for (const f of result.failures) kinds.set(f.kind, (kinds.get(f.kind) ?? 0) + 1);
  // The first failure of each distinct message, three at most.
  const seen = new Set<string>();
  const first = result.failures.filter((f) => {
    const k = `${f.kind}: ${f.message}`;
    return !seen.has(k) && seen.add(k).size <= 3;
  }).map((f) => `row ${o.owner[f.index]} (data_source=${f.dataSource}) ${f.kind}: ${f.message}`);
  const c = o.cfg.custom_reward_function;
  throw new Error(
    `no score for ${failed} of ${o.total} responses of ${o.path} (${
      [...kinds].map(([k, n]) => `${n} ${k}`).join(", ")
    }): ${
      failed === o.total ? "every response failed" : `more than data.max_failed_ratio=${ratio}`
    }; ` +
      `reward: ${c.path === null ? "the built-in scorers" : `${c.path} (${c.name})`}; first: ` +
      first.join("; "),
  );
}

function show(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}
