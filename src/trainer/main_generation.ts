/**
 * verl's main_generation: a parquet of prompts in, the same rows plus a `responses` column (a list
 * of `data.n_samples` strings per row) out. Prompts, through the model's chat template, go
 * `data.batch_size` at a time to one continuous-batching engine (rollout.max_num_seqs,
 * kv_cache_tokens). `rollout.multi_turn.enable` runs the agent loop (main_generation_agent.ts).
 */
import { initGpu } from "../gpu/mod.ts";
import { charTokenizer } from "../io/mod.ts";
import type { Tokenizer } from "../io/mod.ts";
import { CausalLM, type KvDtype } from "../nn/mod.ts";
import { checkContextLength, ConfigError, type GenerationConfig } from "../config/mod.ts";
import {
  DataError,
  parseChatMessages,
  PromptLengths,
  readParquet,
  renderPrompt,
  reportOverlong,
  type Row,
  truncate,
  writeParquet,
} from "../data/mod.ts";
import { tinyModelConfig } from "../nn/mod.ts";
import { submitPrompts } from "../rollout/mod.ts";
import {
  generateConversations,
  type GenerationModel,
  generatorEngine,
} from "./main_generation_agent.ts";
import { checkAgentUsed } from "./agent.ts";
import { checkHalfCache, rolloutPrecision } from "./build.ts";

export interface GenerationSummary {
  rows: number;
  responses: number;
  outputPath: string;
  seconds: number;
  /** Generated tokens (up to and including EOS) per second of generation. */
  tokensPerSecond: number;
}

export type { GenerationModel };

/** Parameter dtype of the loaded weights: model.dtype, or float16 for an f16 rollout. */
export type WeightsDtype = "float32" | "float16";

/**
 * `model.path=null`: the built-in tiny model (random weights) with the character tokenizer, its
 * weights in `dtype` (default model.dtype).
 */
export function tinyGenerationModel(
  cfg: GenerationConfig,
  dtype: WeightsDtype = cfg.model.dtype,
): GenerationModel {
  const tokenizer = charTokenizer();
  const config = tinyModelConfig({
    vocabSize: tokenizer.vocabSize,
    eosTokenId: tokenizer.eosTokenId,
  });
  return {
    network: CausalLM.random(config, {
      seed: cfg.trainer.seed,
      dtype: dtype === "float16" ? "f16" : "f32",
    }),
    tokenizer,
    eosTokenIds: [tokenizer.eosTokenId],
    source: "the built-in tiny model, model.path=null",
  };
}

/** The prompts' token ids, cut as data.truncation says, with a line on what was cut. */
function promptIds(
  rows: Row[],
  tokenizer: Tokenizer,
  cfg: GenerationConfig,
  print: (line: string) => void,
): number[][] {
  const file = cfg.data.path, column = cfg.data.prompt_key;
  const byPrompt = cfg.data.max_prompt_length <= cfg.rollout.prompt_length;
  const lengths = new PromptLengths(
    file,
    Math.min(cfg.data.max_prompt_length, cfg.rollout.prompt_length),
  );
  const ids = rows.map((row, i) => {
    const messages = parseChatMessages(row[column], { file, row: i }, column);
    const full = renderPrompt(messages, tokenizer);
    if (!lengths.add(full.length)) return full;
    return truncate(full, lengths.max, cfg.data.truncation, { file, row: i, column });
  });
  reportOverlong(lengths, {
    mode: cfg.data.truncation,
    maxKey: byPrompt ? "data.max_prompt_length" : "rollout.prompt_length",
    log: print,
    firstKept: () => tokenizer.decode(ids[0], { skipSpecialTokens: false }),
  });
  return ids;
}

/**
 * `data.output_path` must be a file we can write: not a folder, in a folder that exists (made
 * here) and takes new files. Checked before any generation; leaves nothing behind.
 */
async function checkOutputPath(path: string): Promise<void> {
  const key = "data.output_path";
  const fail = (why: string): never => {
    throw new ConfigError(key, `${key}=${path}: ${why}`);
  };
  if (path === "" || path.endsWith("/")) fail("expected a file name, e.g. outputs/gen.parquet");
  const info = await Deno.stat(path).catch(() => null);
  if (info?.isDirectory) fail("is a folder; give a file path such as " + `${path}/gen.parquet`);
  const dir = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) || "/" : ".";
  try {
    await Deno.mkdir(dir, { recursive: true });
  } catch (e) {
    fail(`cannot create its folder ${dir} (${(e as Error).message})`);
  }
  const probe = `${path}.probe-${Deno.pid}-${Date.now()}`;
  try {
    await Deno.writeFile(probe, new Uint8Array(0), { createNew: true });
  } catch (e) {
    fail(`cannot write in ${dir} (${(e as Error).message})`);
  }
  await Deno.remove(probe);
}

/**
 * Whether the rows run the agent loop: `rollout.multi_turn.enable`, or every row's `agent_name`
 * is `tool_agent` (as in the trainer, a mix is an error).
 */
function agentRows(rows: Row[], cfg: GenerationConfig): boolean {
  if (cfg.rollout.multi_turn.enable) return true;
  const tool = rows.filter((r) => r.agent_name === "tool_agent").length;
  if (tool > 0 && tool < rows.length) {
    throw new DataError(
      cfg.data.path,
      `${tool} of ${rows.length} rows have agent_name tool_agent: set ` +
        "rollout.multi_turn.enable=true to run every row through the agent loop",
    );
  }
  return tool > 0;
}

/** The multi-turn job (main_generation_agent.ts): `responses` and `conversations` columns. */
async function runAgentGeneration(
  rows: Row[],
  m: GenerationModel,
  cfg: GenerationConfig,
  o: { print: (line: string) => void; kvDtype: KvDtype },
): Promise<GenerationSummary> {
  let start = performance.now();
  let out;
  try {
    out = await generateConversations(rows, m, cfg, {
      ...o,
      beforeStart: (longest) => {
        checkContextLength({
          maxPromptLength: longest.length,
          maxResponseLength: cfg.rollout.response_length,
          maxPositionEmbeddings: m.network.config.maxPositionEmbeddings,
          model: m.source,
          promptKey: "data.max_prompt_length",
          responseKey: "rollout.response_length",
          promptLabel: `the longest prompt (${longest.length} tokens with the tools' schemas, ` +
            `row ${longest.row} of ${cfg.data.path})`,
        });
        start = performance.now();
      },
    });
  } finally {
    m.network.dispose();
  }
  const seconds = (performance.now() - start) / 1000;
  await writeParquet(cfg.data.output_path, {
    rows: rows.map((row, i) => ({
      ...row,
      responses: out.responses[i],
      conversations: out.conversations[i],
    })),
  });
  return {
    rows: rows.length,
    responses: rows.length * cfg.data.n_samples,
    outputPath: cfg.data.output_path,
    seconds,
    tokensPerSecond: out.tokens / Math.max(seconds, 1e-9),
  };
}

/**
 * Runs the whole job; `print` receives progress lines. rollout.dtype=float16 decodes with an f16
 * KV cache and loads the weights in f16 where the GPU has shader-f16 (no f32 copy is kept: the
 * generator only decodes), as model.dtype=float16 would.
 */
export async function runGeneration(
  cfg: GenerationConfig,
  options: {
    print?: (line: string) => void;
    /**
     * Loads the model in `dtype` once the data is known good (the CLI reads folders through
     * src/mod.ts).
     */
    loadModel: (dtype: WeightsDtype) => Promise<GenerationModel>;
  },
): Promise<GenerationSummary> {
  const print = options.print ?? console.log;
  await checkOutputPath(cfg.data.output_path);
  const rows = await readParquet(cfg.data.path, { required: [cfg.data.prompt_key] });
  if (rows.length === 0) {
    throw new DataError(cfg.data.path, "the file has no rows, so there is nothing to generate");
  }
  const agent = agentRows(rows, cfg);
  checkAgentUsed(cfg.rollout.multi_turn, { prefix: "rollout.multi_turn", agentRows: agent });
  await initGpu();
  const precision = rolloutPrecision(cfg.rollout.dtype, { key: "rollout.dtype", notice: print });
  const loaded = await options.loadModel(precision.f16Weights ? "float16" : cfg.model.dtype);
  const kvDtype = precision.kvDtype;
  if (kvDtype === "f16") {
    try {
      checkHalfCache("rollout.dtype", loaded.network.config.headDim);
    } catch (e) {
      loaded.network.dispose();
      throw e;
    }
  }
  if (agent) return await runAgentGeneration(rows, loaded, cfg, { print, kvDtype });
  const { network: model, tokenizer, eosTokenIds, source } = loaded;
  const r = cfg.rollout, n = cfg.data.n_samples;
  const responses: string[][] = [];
  let start = performance.now();
  let tokens = 0;
  try {
    const ids = promptIds(rows, tokenizer, cfg, print);
    const longest = ids.reduce((a, p, i) => (p.length > ids[a].length ? i : a), 0);
    checkContextLength({
      maxPromptLength: ids[longest].length,
      maxResponseLength: r.response_length,
      maxPositionEmbeddings: model.config.maxPositionEmbeddings,
      model: source,
      promptKey: "data.max_prompt_length",
      responseKey: "rollout.response_length",
      promptLabel: `the longest prompt (${ids[longest].length} tokens, row ${longest} of ` +
        `${cfg.data.path})`,
    });
    const engine = generatorEngine(model, cfg, {
      sequences: cfg.data.batch_size * n,
      longest: ids[longest].length + r.response_length,
      eosTokenIds,
      padTokenId: tokenizer.padTokenId,
      kvDtype,
    });
    start = performance.now();
    try {
      for (let at = 0; at < rows.length; at += cfg.data.batch_size) {
        const chunk = ids.slice(at, at + cfg.data.batch_size);
        const o = { n, maxTokens: r.response_length, seed: cfg.trainer.seed, first: at };
        for (const samples of await submitPrompts(engine, chunk, o)) {
          tokens += samples.reduce((a, res) => a + res.tokens.length, 0);
          const decode = (res: { tokens: Int32Array }) =>
            tokenizer.decode(res.tokens, { skipSpecialTokens: true });
          responses.push(samples.map(decode));
        }
        print(`generated ${Math.min(at + chunk.length, rows.length)}/${rows.length} prompts`);
      }
    } finally {
      await engine.close();
    }
  } finally {
    model.dispose();
  }
  const seconds = (performance.now() - start) / 1000;
  const outputPath = cfg.data.output_path;
  await writeParquet(outputPath, {
    rows: rows.map((row, i) => ({ ...row, responses: responses[i] })),
  });
  return {
    rows: rows.length,
    responses: rows.length * n,
    outputPath,
    seconds,
    tokensPerSecond: tokens / Math.max(seconds, 1e-9),
  };
}
