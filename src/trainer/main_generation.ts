/**
 * verl's main_generation: a parquet of prompts in, the same rows plus a `responses` column (a list
 * of `data.n_samples` strings per row) out. Prompts go through the model's chat template, are
 * left-padded in batches of `data.batch_size`, and generated with the KV-cache engine.
 */
import { initGpu } from "../gpu/mod.ts";
import { loadTokenizer, readModelFolder } from "../io/mod.ts";
import { tensorToFloat32 } from "../io/mod.ts";
import { charTokenizer } from "../io/mod.ts";
import type { Tokenizer } from "../io/mod.ts";
import { CausalLM } from "../nn/mod.ts";
import { ConfigError, type GenerationConfig } from "../config/mod.ts";
import {
  buildPrompt,
  collatePrompts,
  DataError,
  parseChatMessages,
  readParquet,
  type Row,
  writeParquet,
} from "../data/mod.ts";
import { tinyModelConfig } from "../nn/mod.ts";
import { generate } from "../rollout/mod.ts";

export interface GenerationSummary {
  rows: number;
  responses: number;
  outputPath: string;
  seconds: number;
  /** Generated tokens (up to and including EOS) per second of generation. */
  tokensPerSecond: number;
}

interface Loaded {
  model: CausalLM;
  tokenizer: Tokenizer;
  eosTokenIds: number[];
}

async function loadModel(cfg: GenerationConfig): Promise<Loaded> {
  const path = cfg.model.path;
  const dtype = cfg.model.dtype === "float16" ? "f16" : "f32";
  if (!path) {
    // No folder: the built-in tiny model (random weights) with the character tokenizer.
    const tokenizer = charTokenizer();
    const config = tinyModelConfig({
      vocabSize: tokenizer.vocabSize,
      eosTokenId: tokenizer.eosTokenId,
    });
    const model = CausalLM.random(config, { seed: cfg.trainer.seed, dtype });
    return { model, tokenizer, eosTokenIds: [tokenizer.eosTokenId] };
  }
  let folder, tokenizer;
  try {
    folder = await readModelFolder(path);
    tokenizer = await loadTokenizer(path);
  } catch (e) {
    throw new ConfigError("model.path", `model.path=${path}: ${(e as Error).message}`);
  }
  const tensors = new Map<string, Float32Array>();
  for (const [name, t] of folder.tensors) tensors.set(name, tensorToFloat32(t));
  const model = CausalLM.fromTensors(folder.config, tensors, { dtype });
  // HF stops on any of the generation config's EOS ids (Qwen lists <|im_end|> and <|endoftext|>).
  const eos = new Set<number>([tokenizer.eosTokenId]);
  for (const src of [folder.generationConfig?.eosTokenId, folder.config.eosTokenId]) {
    for (const id of src === undefined ? [] : [src].flat()) eos.add(id);
  }
  return { model, tokenizer, eosTokenIds: [...eos] };
}

function promptIds(
  rows: Row[],
  tokenizer: Tokenizer,
  cfg: GenerationConfig,
  maxLength: number,
): number[][] {
  const file = cfg.data.path, column = cfg.data.prompt_key;
  return rows.map((row, i) => {
    const messages = parseChatMessages(row[column], { file, row: i }, column);
    const at = { file, row: i, column };
    return buildPrompt(messages, tokenizer, { maxLength, truncation: cfg.data.truncation, at });
  });
}

/** Runs the whole job; `print` receives progress lines. */
export async function runGeneration(
  cfg: GenerationConfig,
  options: { print?: (line: string) => void } = {},
): Promise<GenerationSummary> {
  const print = options.print ?? console.log;
  const rows = await readParquet(cfg.data.path, { required: [cfg.data.prompt_key] });
  if (rows.length === 0) throw new DataError(cfg.data.path, "no rows to generate for");
  await initGpu();
  const { model, tokenizer, eosTokenIds } = await loadModel(cfg);
  const r = cfg.rollout, n = cfg.data.n_samples;
  const maxPrompt = Math.min(cfg.data.max_prompt_length, r.prompt_length);
  const ids = promptIds(rows, tokenizer, cfg, maxPrompt);
  const responses: string[][] = [];
  const start = performance.now();
  let tokens = 0;
  try {
    for (let at = 0, batch = 0; at < rows.length; at += cfg.data.batch_size, batch++) {
      const items = ids.slice(at, at + cfg.data.batch_size).map((inputIds) => ({ inputIds }));
      const prompts = collatePrompts(items, { padTokenId: tokenizer.padTokenId });
      const R = r.response_length;
      const out = await generate(model, {
        inputIds: prompts.inputIds,
        attentionMask: prompts.attentionMask,
        batch: prompts.batchSize,
        promptLength: prompts.promptLength,
        n,
        responseLength: R,
        temperature: r.temperature,
        topK: r.top_k,
        topP: r.top_p,
        doSample: r.do_sample,
        eosTokenIds: r.ignore_eos ? [] : eosTokenIds,
        padTokenId: tokenizer.padTokenId,
        seed: (cfg.trainer.seed + 7919 * batch) >>> 0,
      });
      for (let b = 0; b < items.length; b++) {
        const texts: string[] = [];
        for (let j = 0; j < n; j++) {
          const row = b * n + j;
          const len = out.responseMask.subarray(row * R, (row + 1) * R).reduce((a, m) => a + m, 0);
          tokens += len;
          const toks = out.responses.subarray(row * R, row * R + len);
          texts.push(tokenizer.decode(toks, { skipSpecialTokens: true }));
        }
        responses.push(texts);
      }
      print(`generated ${Math.min(at + items.length, rows.length)}/${rows.length} prompts`);
    }
  } finally {
    model.dispose();
  }
  const seconds = (performance.now() - start) / 1000;
  const outputPath = cfg.data.output_path;
  const dir = outputPath.includes("/") ? outputPath.slice(0, outputPath.lastIndexOf("/")) : "";
  if (dir) await Deno.mkdir(dir, { recursive: true });
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
