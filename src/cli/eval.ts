/**
 * `deno task eval [cfg.yaml ...] [key=value ...]`: verl's main_eval. Scores the `responses` column
 * of a parquet file and prints `test_score/{data_source}`.
 *
 *   deno task eval data.path=outputs/generations.parquet
 *   deno task eval data.path=gen.parquet custom_reward_function.path=my_reward.ts
 */
import { evaluateResponses } from "../trainer/mod.ts";
import { formatConfig, loadConfig } from "../config/mod.ts";
import { runCli, splitArgs } from "./run.ts";

const USAGE = `usage: deno task eval [config.yaml ...] [key=value ...]
keys: data.path, data.response_key, data.data_source_key, data.reward_model_key,
      data.max_failed_ratio, custom_reward_function.{path,name,reward_kwargs,timeout_s,
      batch_timeout_s}
exits 1 when every response, or more than data.max_failed_ratio of them, got no score`;

/** Runs the evaluator; returns the metrics, or throws with a message for the user. */
export async function main(args: string[]): Promise<Record<string, number>> {
  const cfg = loadConfig("evaluation", splitArgs(args));
  console.log(formatConfig(cfg).trimEnd());
  const result = await evaluateResponses(cfg);
  console.log(`scored ${result.responses} responses of ${result.rows} rows`);
  for (const [k, v] of Object.entries(result.metrics)) console.log(`${k}: ${v}`);
  return result.metrics;
}

if (import.meta.main) await runCli("eval", () => main(Deno.args), { usage: USAGE });
