/**
 * `deno task generate [cfg.yaml ...] [key=value ...]`: verl's main_generation. Reads a parquet of
 * prompts, samples `data.n_samples` responses per prompt and writes the rows plus a `responses`
 * column to `data.output_path`.
 *
 *   deno task generate model.path=ckpt/actor data.path=val.parquet data.n_samples=4
 *   deno task generate gen.yaml rollout.temperature=0.6 rollout.response_length=256
 *   deno task generate data.path=gsm8k.parquet rollout.multi_turn.enable=true \
 *     rollout.multi_turn.interaction_config_path=interaction.yaml   # + conversations column
 */
import { ConfigError, formatConfig, type GenerationConfig, loadConfig } from "../config/mod.ts";
import { loadModel } from "../mod.ts";
import { runCli, splitArgs } from "./run.ts";
import {
  type GenerationModel,
  type GenerationSummary,
  runGeneration,
  tinyGenerationModel,
  type WeightsDtype,
} from "../trainer/mod.ts";

const USAGE = `usage: deno task generate [config.yaml ...] [key=value ...]
keys: data.{path,prompt_key,n_samples,output_path,batch_size,max_prompt_length,truncation},
      model.{path,dtype}, rollout.{dtype,temperature,top_k,top_p,do_sample,prompt_length,
      response_length,ignore_eos}, trainer.seed,
      rollout.multi_turn.{enable,tool_config_path,interaction_config_path,max_assistant_turns,
      max_user_turns,...} (multi-turn: adds a conversations column)`;

/** Runs the generator; returns its summary, or throws with a message for the user. */
export async function main(
  args: string[],
  options: { print?: (line: string) => void } = {},
): Promise<GenerationSummary> {
  const print = options.print ?? console.log;
  const cfg = loadConfig("generation", splitArgs(args));
  print(formatConfig(cfg).trimEnd());
  const s = await runGeneration(cfg, { print, loadModel: (dtype) => modelOf(cfg, dtype) });
  print(
    `wrote ${s.responses} responses for ${s.rows} prompts to ${s.outputPath} ` +
      `(${s.seconds.toFixed(1)} s, ${s.tokensPerSecond.toFixed(1)} tokens/s)`,
  );
  return s;
}

/** model.path through the library surface, or the built-in tiny model when it is null. */
async function modelOf(cfg: GenerationConfig, dtype: WeightsDtype): Promise<GenerationModel> {
  const path = cfg.model.path;
  if (!path) return tinyGenerationModel(cfg, dtype);
  try {
    const m = await loadModel(path, { dtype });
    return {
      network: m.network,
      tokenizer: m.tokenizer,
      eosTokenIds: m.eosTokenIds,
      source: `${path}/config.json`,
    };
  } catch (e) {
    throw new ConfigError("model.path", `model.path=${path}: ${(e as Error).message}`);
  }
}

if (import.meta.main) await runCli("generate", () => main(Deno.args), { usage: USAGE });
