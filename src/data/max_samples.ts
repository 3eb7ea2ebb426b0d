/**
 * verl's `data.train_max_samples` / `val_max_samples`: a run on part of a dataset. As verl does,
 * the rows are chosen before any other processing (tokenisation, overlong filtering): a seeded
 * random choice when the data is shuffled, else the first rows.
 */
import { seededRandom, shuffled } from "../tensor/mod.ts";

/** Seed stream of the choice, apart from the loader's epoch shuffles. */
const CHOICE_STREAM = 7919;

export interface MaxSamples {
  /** Rows to keep; -1 (verl's default) or anything not above 0 keeps all. */
  max: number;
  shuffle: boolean;
  seed: number;
}

/** The row indices (of `total`, in order across files) to keep, or null for all. */
export function pickSamples(total: number, o: MaxSamples): Set<number> | null {
  if (!(o.max > 0) || o.max >= total) return null;
  const all = Array.from({ length: total }, (_, i) => i);
  const order = o.shuffle ? shuffled(all, seededRandom(o.seed, CHOICE_STREAM)) : all;
  return new Set(order.slice(0, o.max));
}
