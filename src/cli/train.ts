/**
 * `deno task train [config.yaml ...] [a.b.c=value ...]`: PPO/GRPO training (verl's main_ppo).
 * With no config file it runs the embedded default: GRPO on the synthetic arithmetic task from the
 * tiny checkpoint shipped in assets/, printing validation accuracy as it climbs.
 */
import { initGpu } from "../gpu/mod.ts";
import { formatConfig, loadConfig, type PpoConfig } from "../config/mod.ts";
import {
  closeAgentEnv,
  fit,
  type FitResult,
  noStepError,
  runFolder,
  setupTrainer,
  stepsSetBy,
  totalSteps,
} from "../trainer/mod.ts";
import { runDirOf, writeRunReport } from "../tracking/mod.ts";
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
  const total = totalSteps(parts);
  const t0 = performance.now();
  const res = await fit(parts);
  parts.tracking.close();
  await parts.remote?.close();
  closeAgentEnv(parts);
  checkTrained(cfg, res, total);
  // The charts of what the file or tensorboard logger wrote (none with the console alone).
  const report = await writeRunReport(runDirOf(runFolder(cfg)), { missingOk: true });
  const secs = ((performance.now() - t0) / 1000).toFixed(1);
  const val = Object.entries(res.lastValidation).map(([k, v]) => `${k}=${v.toFixed(3)}`);
  console.log(`done: ${res.globalStep} steps in ${secs}s${val.length ? `; ${val.join(" ")}` : ""}`);
  if (report) console.log(`report: ${report.html}`);
}

/**
 * A run asked to train (not trainer.val_only) that trained no step, or stopped short of its
 * last step, did not do its job: an error naming the keys that decide the step count.
 */
export function checkTrained(cfg: PpoConfig, res: FitResult, total: number): void {
  const t = cfg.trainer;
  if (t.val_only) return;
  if (Object.keys(res.lastMetrics).length === 0) {
    throw noStepError(t, {
      globalStep: res.globalStep,
      total,
      hint: "trainer.val_only=true is the way to only validate",
    });
  }
  if (res.globalStep < total) {
    throw new Error(
      `training stopped at step ${res.globalStep} of ${total} (${stepsSetBy(t, total)})`,
    );
  }
}

if (import.meta.main) await runCli("train", () => main(Deno.args), { usage: USAGE });
