import assert from "node:assert/strict";
import { DataLoader } from "./loader.ts";

const items = Array.from({ length: 10 }, (_, i) => i);

/** The next n batches, skipping the null that marks an epoch's end. */
function take(l: DataLoader<number>, n: number): number[][] {
  return Array.from({ length: n }, () => (l.next() ?? l.next())!);
}

Deno.test("seeded shuffle is deterministic, differs per epoch and per seed, drops the remainder", () => {
  const a = take(new DataLoader(items, { batchSize: 3, seed: 7, shuffle: true }), 6);
  assert.deepEqual(a, take(new DataLoader(items, { batchSize: 3, seed: 7, shuffle: true }), 6));
  assert.notDeepEqual(a, take(new DataLoader(items, { batchSize: 3, seed: 8, shuffle: true }), 6));
  assert.notDeepEqual(a.slice(0, 3), a.slice(3));
  // 10 items in batches of 3: three batches and nine distinct items per epoch.
  assert.equal(new Set(a.slice(0, 3).flat()).size, 9);
  const plain = take(new DataLoader(items, { batchSize: 5, seed: 1, shuffle: false }), 2);
  assert.deepEqual(plain, [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]);
});

Deno.test("state/restore continues exactly, mid-epoch and across the epoch boundary", () => {
  const options = { batchSize: 3, seed: 3, shuffle: true };
  const full = take(new DataLoader(items, options), 9);
  for (const stopAt of [1, 3, 4, 6]) {
    const first = new DataLoader(items, options);
    take(first, stopAt);
    const resumed = new DataLoader(items, options);
    resumed.restore(JSON.parse(JSON.stringify(first.state())));
    assert.deepEqual(take(resumed, 9 - stopAt), full.slice(stopAt), `stopped at ${stopAt}`);
  }
  const l = new DataLoader(items, options);
  take(l, 4);
  assert.equal(l.epoch, 1);
  // The state names the shuffle's seed; an unshuffled loader has none to name.
  assert.deepEqual(l.state(), { epoch: 1, cursor: 3, seed: 3 });
  const plain = new DataLoader(items, { ...options, shuffle: false });
  take(plain, 1);
  assert.deepEqual(plain.state(), { epoch: 0, cursor: 3 });
});

Deno.test("bad sizes and states are errors that name them", () => {
  assert.throws(
    () => new DataLoader(items, { batchSize: 11, seed: 1, shuffle: false }),
    /train_batch_size=11 is larger than the training set \(10 prompts\)/,
  );
  const l = new DataLoader(items, { batchSize: 2, seed: 1, shuffle: true });
  assert.throws(() => l.restore({ epoch: "two", cursor: 0 }), /"two"/);
  assert.throws(() => l.restore({ epoch: 0, cursor: 11 }), /within 10 items/);
  assert.throws(() => l.restore({ epoch: 0, cursor: 2, seed: "1" }), /"seed":"1"/);
});
