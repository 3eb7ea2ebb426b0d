/**
 * The library surface: a Hugging Face model folder in one call, log-probs and entropies of
 * responses given as token ids, generation, and saving a folder back.
 *
 *   const m = await loadModel("path/to/Qwen2.5-0.5B-Instruct");
 *   const ids = chatPromptIds(m, [{ role: "user", content: "2+3=" }]);
 *   const { responses } = await generateTokens(m, [ids], { maxNewTokens: 8, temperature: 0 });
 *   const { logProbs } = await responseLogProbs(m, [{ prompt: ids, response: responses[0] }]);
 *   await saveModel(m, "out/folder");
 *
 * Everything runs on the WebGPU adapter `loadModel` initialises (any adapter Deno or the browser
 * offers). Training goes through `loadConfig` + `setupTrainer` + `fit`, re-exported here.
 */
import { initGpu } from "./gpu/mod.ts";
import { renderPrompt } from "./data/mod.ts";
import {
  applySavedModules,
  type ChatMessage,
  type HfTokenizer,
  type ModelConfig,
  readAdapterFolder,
  savedModules,
  stopTokenIds,
} from "./io/mod.ts";
import { CausalLM } from "./nn/mod.ts";
import { generate } from "./rollout/mod.ts";
import {
  computeLogProbs,
  type GenBatch,
  readWeights,
  tokenizerFromFiles,
  writeModel,
} from "./trainer/mod.ts";

export { loadConfig } from "./config/mod.ts";
export { fit, setupTrainer } from "./trainer/mod.ts";

/** A loaded model folder: its config, the network on the GPU and its tokenizer. */
export interface Model {
  path: string;
  config: ModelConfig;
  network: CausalLM;
  tokenizer: HfTokenizer;
  /** The folder's companion files (tokenizer, chat template, generation config), kept verbatim. */
  files: Record<string, string>;
  /** Ids generation stops on: the tokenizer's EOS and every EOS id of the folder's configs. */
  eosTokenIds: number[];
}

/**
 * Reads config.json, the safetensors weights and the tokenizer files of a folder. `dtype`
 * "float16" keeps the network's weights in f16 on the GPU (inference; f32 accumulation).
 * `adapter` names a PEFT LoRA folder applied on top (kept apart from the base weights; `saveModel`
 * then writes the adapter folder).
 */
export async function loadModel(
  path: string,
  options: { dtype?: "float32" | "float16"; adapter?: string } = {},
): Promise<Model> {
  await initGpu();
  const w = await readWeights(path);
  const tokenizer = tokenizerFromFiles(w.tokenizerFiles, path);
  const adapter = options.adapter ? await readAdapterFolder(options.adapter, w.config) : null;
  if (adapter && adapter.settings.taskType !== "CAUSAL_LM") {
    throw new Error(
      `${options.adapter}: task_type ${adapter.settings.taskType} is a critic's adapter; ` +
        `loadModel loads causal LMs (task_type CAUSAL_LM)`,
    );
  }
  const lora = adapter ? { settings: adapter.settings, arrays: adapter.adapters } : undefined;
  // The adapter's modules_to_save tensors stand in for the base's, as in PEFT's adapted model.
  const saved = adapter
    ? savedModules(w.config, adapter.saved, options.adapter!, adapter.settings.ensureWeightTying)
    : null;
  const config = saved?.config ?? w.config;
  const tensors = saved ? applySavedModules(w.tensors, saved, (x) => x) : w.tensors;
  return {
    path,
    config,
    network: CausalLM.fromTensors(config, tensors, {
      dtype: options.dtype === "float16" ? "f16" : "f32",
      lora,
    }),
    tokenizer,
    files: w.files,
    eosTokenIds: stopTokenIds(tokenizer.eosTokenId, {
      generationConfig: w.generationConfig,
      configEos: w.config.eosTokenId,
    }),
  };
}

/** Token ids of a conversation rendered by the model's chat template, ready for a reply. */
export function chatPromptIds(model: Model, messages: ChatMessage[]): number[] {
  return renderPrompt(messages, model.tokenizer);
}

/**
 * Writes the model as a Hugging Face folder in the dtype it came in (config.json, model.safetensors,
 * the companion files); a model loaded with a LoRA adapter writes the adapter as a PEFT folder.
 */
export async function saveModel(model: Model, dir: string): Promise<void> {
  await writeModel(dir, {
    config: model.config,
    model: model.network,
    files: model.files,
  });
}

export interface Sequence {
  prompt: readonly number[];
  response: readonly number[];
}

/**
 * log p(response token | everything before it) for each response token, and optionally the
 * entropy of each of those distributions, at `temperature` (default 1). One array per sequence,
 * as long as its response.
 */
export async function responseLogProbs(
  model: Model,
  sequences: readonly Sequence[],
  options: { temperature?: number; withEntropy?: boolean; microBatchSize?: number } = {},
): Promise<{ logProbs: Float32Array[]; entropies: Float32Array[] | null }> {
  const batch = padded(sequences, model.tokenizer.padTokenId);
  const R = batch.responseLength;
  const out = await computeLogProbs(model.network, batch, {
    microBatchSize: options.microBatchSize ?? 16,
    withEntropy: options.withEntropy ?? false,
    temperature: options.temperature ?? 1,
  });
  const rows = (a: Float32Array) =>
    sequences.map((s, b) => a.slice(b * R, b * R + s.response.length));
  return { logProbs: rows(out.logProbs), entropies: out.entropys ? rows(out.entropys) : null };
}

export interface GenerateTokensOptions {
  maxNewTokens: number;
  /** 0 decodes greedily (the default); otherwise samples. */
  temperature?: number;
  topK?: number;
  topP?: number;
  seed?: number;
  /** Samples per prompt. */
  n?: number;
}

/**
 * Continues each prompt until EOS or `maxNewTokens`; returns the new tokens (without the EOS
 * padding after it) and their text, `n` rows per prompt in prompt order.
 */
export async function generateTokens(
  model: Model,
  prompts: readonly (readonly number[])[],
  options: GenerateTokensOptions,
): Promise<{ responses: number[][]; texts: string[] }> {
  const P = Math.max(1, ...prompts.map((p) => p.length));
  const ids = new Int32Array(prompts.length * P).fill(model.tokenizer.padTokenId); // [B, P]
  const mask = new Int32Array(prompts.length * P); // [B, P]
  prompts.forEach((p, b) => {
    ids.set(p, b * P + P - p.length);
    mask.fill(1, b * P + P - p.length, b * P + P);
  });
  const temperature = options.temperature ?? 0;
  const out = await generate(model.network, {
    inputIds: ids,
    attentionMask: mask,
    batch: prompts.length,
    promptLength: P,
    n: options.n ?? 1,
    responseLength: options.maxNewTokens,
    temperature,
    topK: options.topK ?? 0,
    topP: options.topP ?? 1,
    doSample: temperature > 0,
    seed: options.seed ?? 0,
    eosTokenIds: model.eosTokenIds,
    padTokenId: model.tokenizer.padTokenId,
  });
  const R = options.maxNewTokens;
  const responses = Array.from({ length: out.responseMask.length / R }, (_, b) => {
    const row: number[] = [];
    for (let r = 0; r < R && out.responseMask[b * R + r]; r++) row.push(out.responses[b * R + r]);
    return row;
  });
  const texts = responses.map((r) => model.tokenizer.decode(r, { skipSpecialTokens: true }));
  return { responses, texts };
}

/** Left-padded prompts and right-padded responses, as the trainer's batch holds them. */
function padded(sequences: readonly Sequence[], pad: number): GenBatch {
  const B = sequences.length;
  const P = Math.max(1, ...sequences.map((s) => s.prompt.length));
  const R = Math.max(1, ...sequences.map((s) => s.response.length));
  const prompts = new Int32Array(B * P).fill(pad), promptMask = new Int32Array(B * P);
  const responses = new Int32Array(B * R).fill(pad), responseMask = new Int32Array(B * R);
  sequences.forEach((s, b) => {
    prompts.set(s.prompt, b * P + P - s.prompt.length);
    promptMask.fill(1, b * P + P - s.prompt.length, b * P + P);
    responses.set(s.response, b * R);
    responseMask.fill(1, b * R, b * R + s.response.length);
  });
  const none = Array<string>(B).fill("");
  return {
    size: B,
    promptLength: P,
    responseLength: R,
    uid: none,
    dataSource: none,
    groundTruth: none,
    extraInfo: Array.from({ length: B }, () => ({})),
    prompts,
    promptMask,
    responses,
    responseMask,
  };
}
