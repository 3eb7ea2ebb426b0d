/**
 * `deno task merge <base_model_dir> <adapter_dir> <out_dir>`: writes the base model with a PEFT
 * LoRA adapter merged in (W + alpha / r * B A), in the base's dtype, as a folder transformers
 * loads without peft.
 */
import { mergeLoraFolder } from "../trainer/mod.ts";
import { runCli } from "./run.ts";

const USAGE = "usage: deno task merge <base_model_dir> <adapter_dir> <out_dir>";

export async function main(args: string[]): Promise<void> {
  if (args.length !== 3) throw new Error(`expected 3 arguments, got ${args.length}\n${USAGE}`);
  const [base, adapter, out] = args;
  const s = await mergeLoraFolder(base, adapter, out);
  console.log(`merged ${s.modules} LoRA modules of ${adapter} into ${base}: ${out} (${s.dtype})`);
}

if (import.meta.main) await runCli("merge", () => main(Deno.args), { usage: USAGE });
