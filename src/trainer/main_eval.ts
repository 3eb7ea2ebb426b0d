/**
 * verl's main_eval: score a parquet of generated responses and report the mean score per
 * data_source as `test_score/{data_source}` (each row's responses averaged first).
 */
import type { EvaluationConfig } from "../config/mod.ts";
import { DataError, readParquet } from "../data/mod.ts";
import { createRewardManager, type RewardManagerOptions } from "../reward/mod.ts";

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
  const owner: number[] = [];
  const responses: string[] = [];
  const dataSources: string[] = [];
  const groundTruths: string[] = [];
  const extraInfos: unknown[] = [];
  rows.forEach((row, i) => {
    const rs = typeof row[rk] === "string" ? [row[rk]] : row[rk];
    if (!Array.isArray(rs) || rs.some((r) => typeof r !== "string")) {
      throw new DataError(path, "expected a list of response strings", i, rk);
    }
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
    return { metrics, rows: rows.length, responses: responses.length };
  } finally {
    manager.close();
  }
}

function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}
