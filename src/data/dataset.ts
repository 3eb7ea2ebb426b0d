/**
 * The RL prompt dataset: parquet rows -> chat template -> token ids, with verl's handling of
 * prompts longer than max_prompt_length (error, left/right/middle truncation, or filtering).
 */
import type { ChatMessage, Tokenizer } from "../io/mod.ts";
import { readParquet } from "./parquet.ts";
import { type PromptItem, renderPrompt, truncate, type Truncation } from "./prompt.ts";
import { parseRLRow } from "./rows.ts";

/** One prompt with everything its row held; `index` is its position after filtering. */
export interface DataItem extends PromptItem {
  /** Unique within the dataset, so samples of one prompt share it (GRPO groups by it). */
  uid: string;
  rawPrompt: ChatMessage[];
  ability: string | null;
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
        let ids = renderPrompt(r.prompt, tokenizer);
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
