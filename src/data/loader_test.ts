import assert from "node:assert/strict";
import { DataLoader } from "./loader.ts";
import { permutation } from "../tensor/mod.ts";

const data = Array.from({ length: 10 }, (_, i) => i);

function take(l: DataLoader<number>, n: number): string[] {
  return Array.from({ length: n }, () => {
    const b = l.next()!;
    return `${b.epoch}.${b.batch}:${b.items.join(",")}`;
  });
}

Deno.test("seeded shuffle is deterministic, differs per epoch, and covers each epoch", () => {
  const a = take(new DataLoader(data, { batchSize: 3, seed: 7 }), 6);
  const b = take(new DataLoader(data, { batchSize: 3, seed: 7 }), 6);
  assert.deepEqual(a, b);
  assert.notDeepEqual(a.slice(0, 3).map((s) => s.slice(4)), a.slice(3).map((s) => s.slice(4)));
  assert.notDeepEqual(a, take(new DataLoader(data, { batchSize: 3, seed: 8 }), 6));
  // 10 items, batches of 3, last incomplete batch dropped: 3 batches and 9 distinct items per epoch.
  const epoch0 = a.slice(0, 3).flatMap((s) => s.split(":")[1].split(","));
  assert.equal(new Set(epoch0).size, 9);
  assert.deepEqual([...permutation(5, 3)], [...permutation(5, 3)]);
});

Deno.test("state/restore continues exactly, mid-epoch and across the epoch boundary", () => {
  const full = take(new DataLoader(data, { batchSize: 3, seed: 3 }), 9);
  for (const stopAt of [1, 3, 4, 6]) {
    const first = new DataLoader(data, { batchSize: 3, seed: 3 });
    const head = take(first, stopAt);
    const saved = JSON.parse(JSON.stringify(first.state()));
    const resumed = new DataLoader(data, { batchSize: 3, seed: 3 });
    resumed.restore(saved);
    assert.deepEqual([...head, ...take(resumed, 9 - stopAt)], full, `stop at ${stopAt}`);
  }
});

Deno.test("epochs limit, keep-last, unshuffled order, and restore mismatch", () => {
  const l = new DataLoader(data, { batchSize: 4, shuffle: false, dropLast: false, epochs: 2 });
  const all = [...l].map((b) => b.items.length);
  assert.deepEqual(all, [4, 4, 2, 4, 4, 2]);
  assert.equal(l.next(), null);
  const other = new DataLoader(data, { batchSize: 5, seed: 3 });
  assert.throws(
    () => other.restore(new DataLoader(data, { batchSize: 3, seed: 3 }).state()),
    /batchSize=3 but this loader has batchSize=5/,
  );
  assert.throws(() => new DataLoader([1, 2], { batchSize: 3 }), /no batch of 3/);
});
