/**
 * What happened to the overlong prompts of one file: how many `filter_overlong_prompts` dropped,
 * or how many `truncation` cut, printed per file so that a budget that is too small shows.
 */
import { DataError } from "./errors.ts";
import type { Truncation } from "./prompt.ts";

/** Lengths seen in one file, before any cut. */
export class PromptLengths {
  total = 0;
  overlong = 0;
  longest = 0;
  shortest = Infinity;

  constructor(readonly file: string, readonly max: number) {}

  /** Records one prompt's untruncated length; returns whether it is over the budget. */
  add(length: number): boolean {
    this.total++;
    this.longest = Math.max(this.longest, length);
    this.shortest = Math.min(this.shortest, length);
    if (length <= this.max) return false;
    this.overlong++;
    return true;
  }
}

export interface OverlongReport {
  /** `filter` when filter_overlong_prompts dropped them, else the truncation mode. */
  mode: "filter" | Truncation;
  /** Where the budget came from, for the message; default data.max_prompt_length. */
  maxKey?: string;
  log: (line: string) => void;
  /** The first kept prompt, decoded, shown when right truncation cut every prompt. */
  firstKept?: () => string;
}

/**
 * Prints the file's line (filtering: always; truncation: when it cut something) and warns when
 * right truncation cut every prompt. Throws when filtering left nothing of the file.
 */
export function reportOverlong(s: PromptLengths, o: OverlongReport): void {
  const key = `${o.maxKey ?? "data.max_prompt_length"}=${s.max}`;
  if (o.mode === "filter") {
    if (s.total > 0 && s.overlong === s.total) {
      throw new DataError(
        s.file,
        `data.filter_overlong_prompts=true dropped all ${s.total} prompts: each is longer ` +
          `than ${key} tokens (the shortest is ${s.shortest}); raise it`,
      );
    }
    o.log(
      `data.filter_overlong_prompts: dropped ${s.overlong} of ${s.total} prompts of ${s.file} ` +
        `(longer than ${key} tokens${s.overlong ? `; the longest is ${s.longest}` : ""})`,
    );
    return;
  }
  if (s.overlong === 0 || o.mode === "error") return;
  o.log(
    `data.truncation=${o.mode}: cut ${s.overlong} of ${s.total} prompts of ${s.file} to ${key} ` +
      `tokens (the longest was ${s.longest})`,
  );
  if (o.mode === "right" && s.overlong === s.total) {
    const head = o.firstKept?.();
    o.log(
      `warning: data.truncation=right cut every prompt of ${s.file}: each keeps only its first ` +
        `${s.max} tokens, the start of the chat template${
          head === undefined ? "" : ` (${JSON.stringify(head)})`
        }, so the question and the generation prompt are lost; raise ${
          o.maxKey ?? "data.max_prompt_length"
        } or use data.truncation=left or middle`,
    );
  }
}
