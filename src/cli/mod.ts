/**
 * The entry points, one thin file each, behind the deno.json tasks: `train` (PPO/GRPO), `sft`,
 * `generate`, `eval`, `data`, `plot` and `merge` (a LoRA adapter into its base). Each exports `main(args)` so tests and other programs can run a
 * task in-process; run as a script it reports errors through `runCli` (usage, exit code 2 for a
 * bad config or data file, 1 otherwise).
 */
export { main as data } from "./data.ts";
export { main as eval } from "./eval.ts";
export { main as generate } from "./generate.ts";
export { main as merge } from "./merge.ts";
export { main as plot } from "./plot.ts";
export { runCli, splitArgs } from "./run.ts";
export { main as sft } from "./sft.ts";
export { DEFAULT_CONFIG, main as train } from "./train.ts";
