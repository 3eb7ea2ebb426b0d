/**
 * The RL prompt dataset: parquet rows -> chat template -> token ids, with verl's handling of
 * prompts longer than max_prompt_length (error, left/right/middle truncation, or filtering).
 */
import type { ChatMessage, Tokenizer } from "../io/mod.ts";
import { DataError } from "./errors.ts";
import { readParquet } from "./parquet.ts";
import { PromptLengths, reportOverlong } from "./prompt_stats.ts";
import { type PromptItem, renderPrompt, truncate, type Truncation } from "./prompt.ts";
import { parseRLRow } from "./rows.ts";
import { type MaxSamples, pickSamples } from "./max_samples.ts";

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
  /** Where the per-file counts of dropped or cut prompts go; default console.log. */
  log?: (line: string) => void;
  /** data.train_max_samples / val_max_samples: keep only so many rows (see max_samples.ts). */
  maxSamples?: MaxSamples;
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
    const truncation = opts.truncation ?? "error";
    const tables: { file: string; rows: Awaited<ReturnType<typeof readParquet>> }[] = [];
    for (const file of typeof files === "string" ? [files] : files) {
      const rows = await readParquet(file, {
        required: [promptKey, dataSourceKey, "reward_model"],
      });
      if (rows.length === 0) {
        throw new DataError(
          file,
          "the file has no rows: data.train_files and data.val_files need at least one prompt",
        );
      }
      tables.push({ file, rows });
    }
    const total = tables.reduce((n, t) => n + t.rows.length, 0);
    const keep = opts.maxSamples ? pickSamples(total, opts.maxSamples) : null;
    let seen = 0;
    for (const { file, rows } of tables) {
      const lengths = new PromptLengths(file, max);
      const first = items.length;
      rows.forEach((raw, row) => {
        if (keep && !keep.has(seen++)) return;
        const r = parseRLRow(raw, { file, row }, { promptKey, dataSourceKey });
        let ids = renderPrompt(r.prompt, tokenizer);
        if (lengths.add(ids.length)) {
          if (opts.filterOverlongPrompts) return void filtered++;
          ids = truncate(ids, max, truncation, { file, row, column: promptKey });
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
      if (lengths.total === 0) continue; // every row of the file was left out by maxSamples
      reportOverlong(lengths, {
        mode: opts.filterOverlongPrompts ? "filter" : truncation,
        log: opts.log ?? console.log,
        firstKept: () => tokenizer.decode(items[first].inputIds, { skipSpecialTokens: false }),
      });
    }
    return new RLDataset(items, filtered);
  }
}
