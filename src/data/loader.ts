/**
 * Batches of training items (PPO's prompts, SFT's examples), epoch after epoch, with a seeded
 * shuffle. The order of epoch e depends only on (seed, e), so the position {epoch, cursor} and the
 * seed are the whole state: a resumed run continues with exactly the batches it would have seen,
 * epoch boundaries included. The last incomplete batch of an epoch is dropped, as verl's training
 * loader does.
 */
import { seededRandom, shuffled } from "../tensor/mod.ts";

/** What a checkpoint stores to resume the loader. */
export interface LoaderState {
  epoch: number;
  /** Items already served in `epoch`. */
  cursor: number;
  /** The shuffle's seed (absent when the loader does not shuffle). */
  seed?: number;
}

export interface DataLoaderOptions {
  batchSize: number;
  /** Shuffle each epoch (data.shuffle). */
  shuffle: boolean;
  /** Seed of the shuffle (data.seed). */
  seed: number;
  /** What the items are, for messages ("prompts", the default; SFT's "examples"). */
  noun?: string;
}

export class DataLoader<T> {
  #epoch = 0;
  #cursor = 0;
  #order: number[];

  constructor(readonly items: readonly T[], readonly options: DataLoaderOptions) {
    const { batchSize } = options;
    if (!Number.isInteger(batchSize) || batchSize < 1) {
      throw new Error(`data.train_batch_size must be a positive integer, got ${batchSize}`);
    }
    if (items.length < batchSize) {
      throw new Error(
        `data.train_batch_size=${batchSize} is larger than the training set (${items.length} ` +
          `${options.noun ?? "prompts"})`,
      );
    }
    this.#order = this.#orderFor(0);
  }

  #orderFor(epoch: number): number[] {
    const idx = this.items.map((_, i) => i);
    return this.options.shuffle ? shuffled(idx, seededRandom(this.options.seed, epoch)) : idx;
  }

  get epoch(): number {
    return this.#epoch;
  }

  get batchesPerEpoch(): number {
    return Math.floor(this.items.length / this.options.batchSize);
  }

  /** The next batch, or null at the end of an epoch (the next call starts the next epoch). */
  next(): T[] | null {
    const size = this.options.batchSize;
    if (this.#cursor + size > this.items.length) {
      this.#epoch++;
      this.#cursor = 0;
      this.#order = this.#orderFor(this.#epoch);
      return null;
    }
    const out = this.#order.slice(this.#cursor, this.#cursor + size).map((i) => this.items[i]);
    this.#cursor += size;
    return out;
  }

  state(): LoaderState {
    const seed = this.options.shuffle ? { seed: this.options.seed } : {};
    return { epoch: this.#epoch, cursor: this.#cursor, ...seed };
  }

  /**
   * Continues from a saved position (in this loader's order: a saved seed that differs is the
   * caller's to report); a malformed state is an error that shows it.
   */
  restore(state: unknown): void {
    const s = state as Partial<LoaderState> | null;
    const ok = typeof s === "object" && s !== null &&
      Number.isInteger(s.epoch) && s.epoch! >= 0 &&
      Number.isInteger(s.cursor) && s.cursor! >= 0 && s.cursor! <= this.items.length &&
      (s.seed === undefined || Number.isSafeInteger(s.seed));
    if (!ok) {
      throw new Error(
        `data loader state ${JSON.stringify(state)} is not {epoch, cursor, seed?} within ` +
          `${this.items.length} items`,
      );
    }
    this.#epoch = s!.epoch!;
    this.#cursor = s!.cursor!;
    this.#order = this.#orderFor(this.#epoch);
  }
}
