/** `generation_config.json`: the sampling defaults `transformers`' `generate()` reads. */
import { parseJsonObject } from "./hf_config.ts";

/** Defaults for `generate()`; fields left undefined are not written. */
export interface GenerationConfig {
  bosTokenId?: number | null;
  eosTokenId?: number | number[];
  padTokenId?: number | null;
  doSample?: boolean;
  temperature?: number;
  topP?: number;
  topK?: number;
  repetitionPenalty?: number;
  maxNewTokens?: number;
}

const GENERATION_KEYS: [keyof GenerationConfig, string][] = [
  ["bosTokenId", "bos_token_id"],
  ["eosTokenId", "eos_token_id"],
  ["padTokenId", "pad_token_id"],
  ["doSample", "do_sample"],
  ["temperature", "temperature"],
  ["topP", "top_p"],
  ["topK", "top_k"],
  ["repetitionPenalty", "repetition_penalty"],
  ["maxNewTokens", "max_new_tokens"],
];

/** generation_config.json content. */
export function generationConfigToJson(config: GenerationConfig): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [field, key] of GENERATION_KEYS) {
    if (config[field] !== undefined) out[key] = config[field];
  }
  return out;
}

/** Reads the keys of generation_config.json that sampling needs; others are ignored. */
export function parseGenerationConfig(
  source: string | object,
  options: { file?: string } = {},
): GenerationConfig {
  const json = parseJsonObject(source, options.file ?? "generation_config.json");
  const out: Record<string, unknown> = {};
  for (const [field, key] of GENERATION_KEYS) if (json[key] !== undefined) out[field] = json[key];
  return out as GenerationConfig;
}

/**
 * The ids generation stops on: the tokenizer's EOS plus every `eos_token_id` of
 * generation_config.json and config.json, as `transformers` and vLLM stop on any of them (Qwen
 * instruct models list `<|im_end|>` and `<|endoftext|>`).
 */
export function stopTokenIds(
  tokenizerEos: number,
  sources: { generationConfig?: GenerationConfig | null; configEos?: number | number[] | null },
): number[] {
  const ids = new Set<number>([tokenizerEos]);
  for (const src of [sources.generationConfig?.eosTokenId, sources.configEos]) {
    for (const id of src === undefined || src === null ? [] : [src].flat()) ids.add(id);
  }
  return [...ids];
}
