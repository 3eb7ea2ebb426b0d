/**
 * `deno task sft [config.yaml] [a.b.c=value ...]`: supervised fine-tuning with verl's SFT keys.
 * With `model.partial_pretrain=null` it starts from a fresh tiny model with the character
 * tokenizer (how the embedded default checkpoint in assets/ is made), or with the tool tokenizer
 * when `data.multiturn.enable` (how assets/tiny_calc is made). `trainer.resume_mode` (default
 * auto) continues a run from its latest checkpoint in `trainer.default_local_dir`.
 */
import { initGpu } from "../gpu/mod.ts";
import { formatConfig, loadConfig } from "../config/mod.ts";
import { noStepError, setupSft, sftFit, type SftFitResult } from "../trainer/mod.ts";
import { runCli, splitArgs } from "./run.ts";

export async function main(args: string[]): Promise<SftFitResult> {
  const cfg = loadConfig("sft_trainer", splitArgs(args));
  console.log(formatConfig(cfg));
  await initGpu();
  const run = await setupSft(cfg);
  const res = await sftFit(run.fit);
  run.fit.tracking.close();
  const t = cfg.trainer;
  if (res.trained === 0) {
    throw noStepError(t, { globalStep: res.step, total: run.fit.totalSteps });
  }
  console.log(`done: ${res.step} steps, val/loss ${res.valLoss.toFixed(4)}`);
  console.log(`model: ${t.default_local_dir}/global_step_${res.step}/${run.part}`);
  return res;
}

if (import.meta.main) {
  await runCli("sft", () => main(Deno.args), {
    usage:
      "usage: deno task sft [config.yaml ...] [key=value ...] (keys: configs/sft_trainer.yaml)",
  });
}
