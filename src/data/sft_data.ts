/**
 * SFT examples from verl-schema parquet (multi-turn conversations: sft_multiturn.ts): the prompt column (chat messages or a string) rendered
 * with the chat template and the generation prompt, the response column (optionally inside a
 * struct, via response_dict_keys) followed by EOS.
 */
import { type MaxSamples, pickSamples } from "./max_samples.ts";
import type { ChatMessage, Tokenizer } from "../io/mod.ts";
import { DataError } from "./errors.ts";
import { readParquet } from "./parquet.ts";
import { renderPrompt, truncate, type Truncation } from "./prompt.ts";
import { multiturnExampleFromRow, type MultiturnOptions } from "./sft_multiturn.ts";

/** One tokenised example: the prompt (chat-templated) and the response with its EOS. */
export interface SftExample {
  promptIds: number[];
  responseIds: number[];
  /** Per response token: 1 = trained on (default all); multi-turn examples mask non-assistant turns. */
  lossMask?: number[];
}

export interface SftDataOptions {
  promptKey: string;
  responseKey: string;
  promptDictKeys: string[];
  responseDictKeys: string[];
  maxLength: number;
  truncation: Truncation;
  /** `data.multiturn` when enabled: rows are whole conversations (sft_multiturn.ts). */
  multiturn?: Omit<MultiturnOptions, "maxLength" | "truncation">;
  /** data.train_max_samples / val_max_samples: keep only so many rows (see max_samples.ts). */
  maxSamples?: MaxSamples;
}

function dig(value: unknown, keys: string[], where: string): unknown {
  let v = value;
  for (const k of keys) {
    if (v === null || typeof v !== "object" || !(k in (v as Record<string, unknown>))) {
      throw new Error(`${where}: has no key "${k}"`);
    }
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

export function sftExampleFromRow(
  row: Record<string, unknown>,
  tokenizer: Tokenizer,
  o: SftDataOptions,
  where: { file: string; row: number },
): SftExample {
  const at = (col: string) => `${where.file} row ${where.row} column ${col}`;
  if (!(o.promptKey in row)) throw new Error(`${at(o.promptKey)}: column is missing`);
  if (!(o.responseKey in row)) throw new Error(`${at(o.responseKey)}: column is missing`);
  const prompt = dig(row[o.promptKey], o.promptDictKeys, at(o.promptKey));
  const response = dig(row[o.responseKey], o.responseDictKeys, at(o.responseKey));
  if (typeof response !== "string") {
    throw new Error(`${at(o.responseKey)}: expected a string response, got ${typeof response}`);
  }
  const messages: ChatMessage[] = typeof prompt === "string"
    ? [{ role: "user", content: prompt }]
    : Array.isArray(prompt)
    ? prompt as ChatMessage[]
    : (() => {
      throw new Error(`${at(o.promptKey)}: expected chat messages or a string`);
    })();
  let promptIds = renderPrompt(messages, tokenizer);
  const responseIds = [
    ...tokenizer.encode(response, { addSpecialTokens: false }),
    tokenizer.eosTokenId,
  ];
  const room = o.maxLength - responseIds.length;
  if (promptIds.length > room) {
    promptIds = truncate(promptIds, Math.max(1, room), o.truncation, {
      file: where.file,
      row: where.row,
      column: o.promptKey,
    });
  }
  return { promptIds, responseIds };
}

export async function loadSftExamples(
  files: string | string[],
  tokenizer: Tokenizer,
  o: SftDataOptions,
): Promise<SftExample[]> {
  const out: SftExample[] = [];
  const mt = o.multiturn;
  const tables: { file: string; rows: Awaited<ReturnType<typeof readParquet>> }[] = [];
  for (const file of typeof files === "string" ? [files] : files) {
    const required = mt ? [mt.messagesKey] : [o.promptKey, o.responseKey];
    const rows = await readParquet(file, { required });
    if (rows.length === 0) {
      throw new DataError(
        file,
        "the file has no rows: data.train_files and data.val_files need at least one example",
      );
    }
    tables.push({ file, rows });
  }
  const total = tables.reduce((n, t) => n + t.rows.length, 0);
  const keep = o.maxSamples ? pickSamples(total, o.maxSamples) : null;
  let seen = 0;
  for (const { file, rows } of tables) {
    rows.forEach((r, row) => {
      if (keep && !keep.has(seen++)) return;
      out.push(
        mt
          ? multiturnExampleFromRow(r, tokenizer, {
            ...mt,
            maxLength: o.maxLength,
            truncation: o.truncation,
          }, {
            file,
            row,
          })
          : sftExampleFromRow(r, tokenizer, o, { file, row }),
      );
    });
  }
  return out;
}
