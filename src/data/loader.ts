/**
 * Batches over a dataset, epoch after epoch, with a seeded shuffle. The order of epoch e depends
 * only on (seed, e), so the position (epoch, batch) is the whole state: a resumed run continues
 * with exactly the batches it would have seen.
 */
import { mixSeed, permutation } from "../tensor/mod.ts";

export interface DataLoaderOptions {
  batchSize: number;
  /** Shuffle each epoch (data.shuffle). */
  shuffle?: boolean;
  /** Seed of the shuffle (data.seed). */
  seed?: number;
  /** Drop the last incomplete batch of an epoch (true for training, as in verl). */
  dropLast?: boolean;
  /** Stop after this many epochs; default: never stop. */
  epochs?: number;
}

/** What a checkpoint stores to resume the loader. */
export interface LoaderState {
  epoch: number;
  /** Batches already served in `epoch`. */
  batch: number;
  seed: number;
  size: number;
  batchSize: number;
  shuffle: boolean;
  dropLast: boolean;
}

/** One batch and where it sits in the run. */
export interface LoaderBatch<T> {
  epoch: number;
  /** Batch number within the epoch. */
  batch: number;
  items: T[];
}

export class DataLoader<T> {
  #epoch = 0;
  #batch = 0;
  #order: Uint32Array | null = null;
  readonly #o: Required<DataLoaderOptions>;

  constructor(readonly data: readonly T[], opts: DataLoaderOptions) {
    if (!Number.isInteger(opts.batchSize) || opts.batchSize < 1) {
      throw new Error(`DataLoader: batchSize must be a positive integer, got ${opts.batchSize}`);
    }
    this.#o = {
      shuffle: true,
      seed: 1,
      dropLast: true,
      epochs: Infinity,
      ...opts,
    };
    if (this.batchesPerEpoch === 0) {
      throw new Error(
        `DataLoader: ${data.length} items make no batch of ${opts.batchSize}` +
          (this.#o.dropLast ? " (incomplete batches are dropped)" : ""),
      );
    }
  }

  /** Batches in one epoch. */
  get batchesPerEpoch(): number {
    const n = this.data.length / this.#o.batchSize;
    return this.#o.dropLast ? Math.floor(n) : Math.ceil(n);
  }

  /** The current epoch (the one the next batch comes from). */
  get epoch(): number {
    return this.#epoch;
  }

  /** The next batch, moving on to the next epoch as needed; null after the last epoch. */
  next(): LoaderBatch<T> | null {
    if (this.#batch >= this.batchesPerEpoch) {
      this.#epoch++;
      this.#batch = 0;
      this.#order = null;
    }
    if (this.#epoch >= this.#o.epochs) return null;
    const order = this.#order ??= this.#orderOf(this.#epoch);
    const start = this.#batch * this.#o.batchSize;
    const end = Math.min(start + this.#o.batchSize, this.data.length);
    const items = Array.from(order.subarray(start, end), (i) => this.data[i]);
    return { epoch: this.#epoch, batch: this.#batch++, items };
  }

  /** Iterates over the remaining batches. */
  *[Symbol.iterator](): Iterator<LoaderBatch<T>> {
    for (let b = this.next(); b !== null; b = this.next()) yield b;
  }

  /** The position, for checkpoints. */
  state(): LoaderState {
    return {
      epoch: this.#epoch,
      batch: this.#batch,
      seed: this.#o.seed,
      size: this.data.length,
      batchSize: this.#o.batchSize,
      shuffle: this.#o.shuffle,
      dropLast: this.#o.dropLast,
    };
  }

  /** Continues from a saved position; the data and settings must match the saved ones. */
  restore(s: LoaderState): void {
    const mine = this.state();
    for (const k of ["seed", "size", "batchSize", "shuffle", "dropLast"] as const) {
      if (s[k] !== mine[k]) {
        throw new Error(
          `DataLoader.restore: saved ${k}=${s[k]} but this loader has ${k}=${mine[k]}; ` +
            "the resumed run would not see the same batches",
        );
      }
    }
    this.#epoch = s.epoch;
    this.#batch = s.batch;
    this.#order = null;
  }

  #orderOf(epoch: number): Uint32Array {
    if (this.#o.shuffle) return permutation(this.data.length, mixSeed(this.#o.seed, epoch));
    return Uint32Array.from({ length: this.data.length }, (_, i) => i);
  }
}
