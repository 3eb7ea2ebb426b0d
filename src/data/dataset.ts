/**
 * The RL prompt dataset: parquet rows -> chat template -> token ids, with verl's handling of
 * prompts longer than max_prompt_length (error, left/right/middle truncation, or filtering).
 */
import type { ChatMessage, Tokenizer } from "../io/mod.ts";
import { DataError } from "./errors.ts";
import { readParquet } from "./parquet.ts";
import { parseRLRow } from "./rows.ts";

/** How an overlong prompt is handled. */
/** How an overlong prompt is handled (`data.truncation`). */
export const TRUNCATIONS = ["error", "left", "right", "middle"] as const;
export type Truncation = typeof TRUNCATIONS[number];

/** One prompt, ready for the loader. */
export interface DataItem {
  /** Position in the dataset (after filtering). */
  index: number;
  /** Unique within the dataset, so samples of one prompt share it (GRPO groups by it). */
  uid: string;
  inputIds: number[];
  rawPrompt: ChatMessage[];
  dataSource: string;
  ability: string | null;
  groundTruth: string;
  extraInfo: Record<string, unknown>;
  agentName: string | null;
  interactionKwargs: Record<string, unknown> | null;
  /** Where it came from. */
  file: string;
  row: number;
}

export interface RLDatasetOptions {
  maxPromptLength: number;
  /** Column with the chat messages (data.prompt_key). */
  promptKey?: string;
  /** Column with the data source (data.reward_fn_key). */
  dataSourceKey?: string;
  truncation?: Truncation;
  /** Drop overlong prompts instead (data.filter_overlong_prompts). */
  filterOverlongPrompts?: boolean;
}

export class RLDataset {
  private constructor(
    readonly items: DataItem[],
    /** Prompts dropped by filter_overlong_prompts. */
    readonly filtered: number,
  ) {}

  get length(): number {
    return this.items.length;
  }

  /** Reads the files in order and tokenises every prompt. */
  static async load(
    files: string | string[],
    tokenizer: Tokenizer,
    opts: RLDatasetOptions,
  ): Promise<RLDataset> {
    const promptKey = opts.promptKey ?? "prompt";
    const dataSourceKey = opts.dataSourceKey ?? "data_source";
    const max = opts.maxPromptLength;
    const items: DataItem[] = [];
    let filtered = 0;
    for (const file of typeof files === "string" ? [files] : files) {
      const rows = await readParquet(file, {
        required: [promptKey, dataSourceKey, "reward_model"],
      });
      rows.forEach((raw, row) => {
        const r = parseRLRow(raw, { file, row }, { promptKey, dataSourceKey });
        const text = tokenizer.applyChatTemplate(r.prompt, { addGenerationPrompt: true });
        // The template already wrote any special tokens as text.
        let ids = tokenizer.encode(text, { addSpecialTokens: false });
        if (ids.length > max) {
          if (opts.filterOverlongPrompts) return void filtered++;
          ids = truncate(ids, max, opts.truncation ?? "error", { file, row, column: promptKey });
        }
        const index = items.length;
        items.push({
          index,
          uid: `p${index}`,
          inputIds: ids,
          rawPrompt: r.prompt,
          dataSource: r.dataSource,
          ability: r.ability,
          groundTruth: r.groundTruth,
          extraInfo: r.extraInfo,
          agentName: r.agentName,
          interactionKwargs: r.interactionKwargs,
          file,
          row,
        });
      });
    }
    return new RLDataset(items, filtered);
  }
}

/** Cuts ids to `max` tokens; `error` throws naming the file, the row and both lengths. */
export function truncate(
  ids: number[],
  max: number,
  how: Truncation,
  at: { file: string; row: number; column: string },
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
