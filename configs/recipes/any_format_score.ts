/**
 * A format-agnostic scorer for the synthetic arithmetic task, as a verl custom reward function:
 * 1.0 when the last integer in the response equals the ground truth, whatever surrounds it (`6`,
 * `#### 6` and `= 6` all count), else 0.0. The built-in scorer (`synthetic/arithmetic`) accepts
 * only `#### 6`, so the two together split a checkpoint's accuracy into arithmetic and format:
 *
 *   deno task generate model.path=assets/tiny_arith data.path=data/arithmetic/val.parquet \
 *     rollout.do_sample=false rollout.response_length=12 data.output_path=outputs/gen.parquet
 *   deno task eval data.path=outputs/gen.parquet                      # strict: `#### n` only
 *   deno task eval data.path=outputs/gen.parquet \
 *     custom_reward_function.path=configs/recipes/any_format_score.ts  # any format
 */
export function compute_score(
  _dataSource: string,
  solution: string,
  groundTruth: string,
): number {
  const numbers = solution.match(/-?\d+/g);
  if (!numbers) return 0;
  return Number(numbers[numbers.length - 1]) === Number(groundTruth) ? 1 : 0;
}
