/**
 * A prompt loader that can look ahead: `peek(i)` is the i-th batch that `next()` will return
 * (end-of-epoch nulls skipped), so jobs of later steps can be published early (distributed
 * `max_staleness` >= 1). Its state is the inner loader's state before the first batch looked at,
 * so a checkpoint taken while batches are in flight resumes with those batches.
 */
import type { PromptItem } from "../data/mod.ts";
import type { PromptLoader } from "./parts.ts";

export class PeekLoader implements PromptLoader {
  #inner: PromptLoader;
  #buffer: { items: PromptItem[] | null; stateBefore: unknown }[] = [];

  constructor(inner: PromptLoader) {
    this.#inner = inner;
  }

  next(): PromptItem[] | null {
    const head = this.#buffer.shift();
    return head ? head.items : this.#inner.next();
  }

  /** The i-th non-null batch ahead (0 = the one the next non-null `next()` returns). */
  peek(i: number): PromptItem[] {
    let seen = 0, nulls = 0;
    for (let k = 0;; k++) {
      if (k === this.#buffer.length) {
        const stateBefore = this.#inner.state();
        const items = this.#inner.next();
        nulls = items ? 0 : nulls + 1;
        if (nulls > 1) throw new Error("the training set yields no batch");
        this.#buffer.push({ items, stateBefore });
      }
      const items = this.#buffer[k].items;
      if (items && seen++ === i) return items;
    }
  }

  get epoch(): number {
    return this.#inner.epoch;
  }

  get batchesPerEpoch(): number {
    return this.#inner.batchesPerEpoch;
  }

  state(): unknown {
    return this.#buffer.length ? this.#buffer[0].stateBefore : this.#inner.state();
  }

  restore(state: unknown): void {
    this.#buffer = [];
    this.#inner.restore(state);
  }
}
