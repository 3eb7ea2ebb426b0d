import assert from "node:assert/strict";
import { DataLoader, type PromptItem } from "../data/mod.ts";
import { PeekLoader } from "./peek_loader.ts";

const items: PromptItem[] = Array.from({ length: 6 }, (_, i) => ({
  index: i,
  inputIds: [1, 2],
  dataSource: "d",
  groundTruth: "",
  extraInfo: {},
}));
const ids = (xs: PromptItem[] | null) => xs?.map((x) => x.index).join(",") ?? "null";

Deno.test("PeekLoader: peeked batches come next, across the epoch end, and a checkpoint keeps them", () => {
  const plain = new DataLoader(items, { batchSize: 2, shuffle: true, seed: 3 });
  const order = [plain.next(), plain.next(), plain.next(), plain.next(), plain.next()].map(ids);
  assert.equal(order[3], "null"); // the end of epoch 1

  const peek = new PeekLoader(new DataLoader(items, { batchSize: 2, shuffle: true, seed: 3 }));
  assert.equal(ids(peek.next()), order[0]);
  const saved = peek.state();
  // Looking two batches ahead crosses the epoch end (its null is kept for next()).
  assert.equal(ids(peek.peek(0)), order[1]);
  assert.equal(ids(peek.peek(2)), order[4]);
  assert.deepEqual(peek.state(), saved, "the state moved while only peeking");
  assert.deepEqual([peek.next(), peek.next(), peek.next(), peek.next()].map(ids), order.slice(1));

  // A resume from the state taken before the peek serves the peeked batches again.
  const again = new PeekLoader(new DataLoader(items, { batchSize: 2, shuffle: true, seed: 3 }));
  again.restore(saved);
  assert.equal(ids(again.next()), order[1]);
});
