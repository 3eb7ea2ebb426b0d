/**
 * The draw loop of the synthetic tasks: distinct problems from a seeded PRNG, none of an excluded
 * set (validation rows never repeat a training row), refused when the problem space is too small
 * for the count asked.
 */
import { mulberry32 } from "../tensor/mod.ts";
import type { Row } from "./parquet.ts";

/** A drawn problem under its key (its expression), or null to draw again. */
export type Draw<P> = (rand: () => number) => { key: string; problem: P } | null;

/**
 * `count` rows of distinct problems: `draw` proposes one, repeats and keys in `exclude` are drawn
 * again, `row` builds the row (with its index, and the PRNG for any later draw).
 */
export function distinctRows<P>(
  o: { count: number; space: number; seed?: number; exclude?: ReadonlySet<string> },
  draw: Draw<P>,
  row: (problem: P, key: string, index: number, rand: () => number) => Row,
): Row[] {
  if (o.count > o.space / 2) {
    throw new Error(`asked for ${o.count} distinct problems, but only ~${o.space} exist`);
  }
  const rand = mulberry32(o.seed ?? 1);
  const seen = new Set<string>();
  const rows: Row[] = [];
  while (rows.length < o.count) {
    const d = draw(rand);
    if (!d || seen.has(d.key) || o.exclude?.has(d.key)) continue;
    seen.add(d.key);
    rows.push(row(d.problem, d.key, rows.length, rand));
  }
  return rows;
}
