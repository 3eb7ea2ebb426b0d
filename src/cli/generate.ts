/**
 * `deno task generate [cfg.yaml ...] [key=value ...]`: verl's main_generation. Reads a parquet of
 * prompts, samples `data.n_samples` responses per prompt and writes the rows plus a `responses`
 * column to `data.output_path`.
 *
 *   deno task generate model.path=ckpt/actor data.path=val.parquet data.n_samples=4
 *   deno task generate gen.yaml rollout.temperature=0.6 rollout.response_length=256
 */
import { ConfigError, formatConfig, loadConfig } from "../trainer/config/mod.ts";
import { DataError } from "../trainer/data/mod.ts";
import { type GenerationSummary, runGeneration } from "../rollout/main_generation.ts";

const USAGE = `usage: deno task generate [config.yaml ...] [key=value ...]
keys: data.{path,prompt_key,n_samples,output_path,batch_size,max_prompt_length,truncation},
      model.{path,dtype}, rollout.{temperature,top_k,top_p,do_sample,prompt_length,
      response_length,ignore_eos}, trainer.seed`;

/** Runs the generator; returns its summary, or throws with a message for the user. */
export async function main(
  args: string[],
  options: { print?: (line: string) => void } = {},
): Promise<GenerationSummary> {
  const print = options.print ?? console.log;
  const files = args.filter((a) => /\.ya?ml$/.test(a) && !a.includes("="));
  const overrides = args.filter((a) => !files.includes(a));
  const cfg = loadConfig("generation", { files, overrides });
  print(formatConfig(cfg).trimEnd());
  const s = await runGeneration(cfg, { print });
  print(
    `wrote ${s.responses} responses for ${s.rows} prompts to ${s.outputPath} ` +
      `(${s.seconds.toFixed(1)} s, ${s.tokensPerSecond.toFixed(1)} tokens/s)`,
  );
  return s;
}

if (import.meta.main) {
  if (Deno.args.includes("--help") || Deno.args.includes("-h")) {
    console.log(USAGE);
    Deno.exit(0);
  }
  try {
    await main(Deno.args);
  } catch (e) {
    const known = e instanceof ConfigError || e instanceof DataError;
    console.error(`generate: ${known ? (e as Error).message : (e as Error).stack ?? e}`);
    if (e instanceof ConfigError) console.error(USAGE);
    Deno.exit(known ? 2 : 1);
  }
}
