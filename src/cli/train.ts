/**
 * `deno task train [config.yaml ...] [a.b.c=value ...]`: PPO/GRPO training (verl's main_ppo).
 * With no config file it runs the embedded default: GRPO on the synthetic arithmetic task from the
 * tiny checkpoint shipped in assets/, printing validation accuracy as it climbs.
 */
import { initGpu } from "../gpu/mod.ts";
import { formatConfig, loadConfig } from "../config/mod.ts";
import { fit, setupTrainer } from "../trainer/mod.ts";
import { runCli, splitArgs } from "./run.ts";

export const DEFAULT_CONFIG =
  new URL("../../configs/arithmetic_grpo.yaml", import.meta.url).pathname;

const USAGE = `usage: deno task train [config.yaml ...] [key=value ...]
with no config file: ${DEFAULT_CONFIG}; every key is listed in configs/ppo_trainer.yaml`;

export async function main(args: string[]): Promise<void> {
  const { files, overrides } = splitArgs(args);
  const cfg = loadConfig("ppo_trainer", {
    files: files.length ? files : [DEFAULT_CONFIG],
    overrides,
  });
  console.log(formatConfig(cfg));
  const g = await initGpu();
  console.log(`adapter: ${g.adapterName}${g.hasF16 ? " (shader-f16)" : ""}`);
  const parts = await setupTrainer(cfg);
  const t0 = performance.now();
  const res = await fit(parts);
  parts.tracking.close();
  const secs = ((performance.now() - t0) / 1000).toFixed(1);
  const val = Object.entries(res.lastValidation).map(([k, v]) => `${k}=${v.toFixed(3)}`);
  console.log(`done: ${res.globalStep} steps in ${secs}s${val.length ? `; ${val.join(" ")}` : ""}`);
}

if (import.meta.main) await runCli("train", () => main(Deno.args), { usage: USAGE });
