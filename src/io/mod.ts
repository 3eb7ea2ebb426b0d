/**
 * Model and tokenizer interop: safetensors, Hugging Face config.json and model folders, tokenizers
 * with chat templates, and the synthetic tasks' character tokenizer.
 *
 * Browser-safe (no file system): dtype, safetensors, shards, hf_config, generation_config, hf_weights, peft, peft_saved_modules, tokenizer,
 * char_tokenizer, tool_tokenizer. Deno-only: safetensors_fs, hf_folder and peft_folder.
 */
export type { ChatMessage, Tokenizer } from "./tokenizer_types.ts";
export * from "./dtype.ts";
export * from "./safetensors.ts";
export * from "./shards.ts";
export * from "./safetensors_fs.ts";
export * from "./hf_config.ts";
export * from "./rope_config.ts";
export * from "./generation_config.ts";
export * from "./hf_weights.ts";
export * from "./hf_folder.ts";
export * from "./tokenizer.ts";
export {
  CHAR_ALPHABET,
  CHAR_CHAT_TEMPLATE,
  CHAR_SPECIAL_TOKENS,
  charTokenizer,
  type CharTokenizerFiles,
  charTokenizerFiles,
  type CharTokenizerOptions,
  charTokenizerTexts,
} from "./char_tokenizer.ts";
export {
  TOOL_ALPHABET,
  TOOL_CALL_TOKENS,
  TOOL_CHAT_TEMPLATE_TINY,
  toolTokenizer,
  toolTokenizerTexts,
} from "./tool_tokenizer.ts";
export { architecture, ARCHITECTURES, type ArchitectureSpec } from "./architectures.ts";
export * from "./peft.ts";
export * from "./peft_saved_modules.ts";
export * from "./peft_folder.ts";
