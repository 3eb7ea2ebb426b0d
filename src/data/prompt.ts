/**
 * The one prompt builder: chat messages -> the tokenizer's chat template with the generation
 * prompt -> token ids, cut to the prompt budget by `data.truncation`. The RL dataset, the SFT
 * examples, `deno task generate` and the browser page all build prompts here, so a prompt is the
 * same token sequence wherever it is trained, generated from or shown.
 */
import type { ChatMessage, Tokenizer } from "../io/mod.ts";
import { DataError } from "./errors.ts";
import { parseRLRow } from "./rows.ts";

/** How an overlong prompt is handled (`data.truncation`). */
export const TRUNCATIONS = ["error", "left", "right", "middle"] as const;
export type Truncation = typeof TRUNCATIONS[number];

/** Where a prompt came from, for error messages. */
export interface PromptSource {
  file: string;
  row: number;
  column: string;
}

/** One prompt as the trainer consumes it. */
export interface PromptItem {
  /** Position in its dataset; samples of one prompt share the uid derived from it. */
  index: number;
  inputIds: number[];
  dataSource: string;
  groundTruth: string;
  extraInfo: Record<string, unknown>;
  /** The row's chat messages (the agent loop renders them again with the tools' schemas). */
  rawPrompt?: ChatMessage[];
  /** The row's `agent_name` column (`tool_agent` runs the agent loop). */
  agentName?: string | null;
  /** The row's `interaction_kwargs` column (`name` picks the agent loop's interaction). */
  interactionKwargs?: Record<string, unknown> | null;
}

export interface RenderOptions {
  /** Default true. */
  addGenerationPrompt?: boolean;
  /** OpenAI function schemas handed to the template as `tools` (tool-calling prompts). */
  tools?: readonly unknown[];
  /** Further template variables (e.g. `enable_thinking`). */
  variables?: Record<string, unknown>;
}

/** The chat template's text for `messages` (tools go in the template's `tools` variable). */
export function renderChat(
  messages: ChatMessage[],
  tokenizer: Tokenizer,
  options: RenderOptions = {},
): string {
  const tools = options.tools?.length ? options.tools : undefined;
  // Hugging Face tokenizers take further template variables in `extra`.
  const extra = { ...options.variables, ...(tools ? { tools } : {}) };
  const templateOptions: { addGenerationPrompt: boolean; extra?: Record<string, unknown> } = {
    addGenerationPrompt: options.addGenerationPrompt ?? true,
    ...(Object.keys(extra).length ? { extra } : {}),
  };
  return tokenizer.applyChatTemplate(messages, templateOptions);
}

/** Chat template (with the generation prompt) and tokenisation, untruncated. */
export function renderPrompt(
  messages: ChatMessage[],
  tokenizer: Tokenizer,
  options: RenderOptions = {},
): number[] {
  const text = renderChat(messages, tokenizer, options);
  // The template already wrote any special tokens as text.
  return tokenizer.encode(text, { addSpecialTokens: false });
}

/** `renderPrompt`, then cut to `maxLength` tokens as `truncation` says. */
export function buildPrompt(
  messages: ChatMessage[],
  tokenizer: Tokenizer,
  options: { maxLength: number; truncation: Truncation; at: PromptSource },
): number[] {
  const ids = renderPrompt(messages, tokenizer);
  return ids.length <= options.maxLength
    ? ids
    : truncate(ids, options.maxLength, options.truncation, options.at);
}

/** Cuts ids to `max` tokens; `error` throws naming the file, the row and both lengths. */
export function truncate(
  ids: number[],
  max: number,
  how: Truncation,
  at: PromptSource,
): number[] {
  switch (how) {
    case "left":
      return ids.slice(ids.length - max);
    case "right":
      return ids.slice(0, max);
    case "middle": {
      const head = Math.floor(max / 2);
      return [...ids.slice(0, head), ...ids.slice(ids.length - (max - head))];
    }
    case "error":
      throw new DataError(
        at.file,
        `prompt is ${ids.length} tokens, longer than data.max_prompt_length=${max} ` +
          "(set data.truncation or data.filter_overlong_prompts=true)",
        at.row,
        at.column,
      );
  }
}

/** verl rows held in memory (the page's synthetic task) -> prompt items, as the dataset does. */
export function rowsToPromptItems(
  rows: Record<string, unknown>[],
  tokenizer: Tokenizer,
  options: { maxLength?: number; truncation?: Truncation; source?: string } = {},
): PromptItem[] {
  const file = options.source ?? "(in memory)";
  return rows.map((raw, row) => {
    const r = parseRLRow(raw, { file, row }, { promptKey: "prompt", dataSourceKey: "data_source" });
    return {
      index: row,
      inputIds: buildPrompt(r.prompt, tokenizer, {
        maxLength: options.maxLength ?? Infinity,
        truncation: options.truncation ?? "error",
        at: { file, row, column: "prompt" },
      }),
      dataSource: r.dataSource,
      groundTruth: r.groundTruth,
      extraInfo: r.extraInfo,
      rawPrompt: r.prompt,
      agentName: r.agentName,
      interactionKwargs: r.interactionKwargs,
    };
  });
}
