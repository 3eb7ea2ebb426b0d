import assert from "node:assert/strict";
import { type Batch, responseScatter, responseSlice, sequenceInputs } from "./batch.ts";
import { ItemLoader } from "./build.ts";
import type { PromptItem } from "./stages.ts";

function batch(): Batch {
  // Two samples, P = 3 (left-padded), R = 3 (right-padded; the second stops after one token).
  return {
    size: 2,
    promptLength: 3,
    responseLength: 3,
    uid: ["a", "b"],
    dataSource: ["s", "s"],
    groundTruth: ["1", "2"],
    extraInfo: [{}, {}],
    prompts: Int32Array.from([0, 5, 6, 7, 8, 9]),
    promptMask: Int32Array.from([0, 1, 1, 1, 1, 1]),
    responses: Int32Array.from([10, 11, 12, 13, 0, 0]),
    responseMask: Int32Array.from([1, 1, 1, 1, 0, 0]),
  };
}

Deno.test("sequence inputs: positions skip left padding, targets mark the predicting positions", () => {
  const s = sequenceInputs(batch(), [0, 1]);
  assert.deepEqual([...s.inputIds], [0, 5, 6, 10, 11, 12, 7, 8, 9, 13, 0, 0]);
  assert.deepEqual([...s.positionIds], [0, 0, 1, 2, 3, 4, 0, 1, 2, 3, 3, 3]);
  // Position P - 1 + r predicts response token r; padding predicts nothing.
  assert.deepEqual([...s.targets], [
    -100,
    -100,
    10,
    11,
    12,
    -100,
    -100,
    -100,
    13,
    -100,
    -100,
    -100,
  ]);
});

Deno.test("response slice and scatter are inverse on the response positions", () => {
  const full = Float32Array.from({ length: 12 }, (_, i) => i);
  const part = responseSlice(full, 2, 3, 3);
  assert.deepEqual([...part], [2, 3, 4, 8, 9, 10]);
  assert.deepEqual([...responseScatter(part, 2, 3, 3)], [0, 0, 2, 3, 4, 0, 0, 0, 8, 9, 10, 0]);
});

Deno.test("the item loader restores its position, across an epoch boundary", () => {
  const items: PromptItem[] = Array.from({ length: 5 }, (_, i) => ({
    index: i,
    inputIds: [i],
    dataSource: "s",
    groundTruth: "",
    extraInfo: {},
  }));
  const a = new ItemLoader(items, 2, { shuffle: true, seed: 3 });
  const seen: number[][] = [];
  for (let k = 0; k < 3; k++) seen.push((a.next() ?? a.next())!.map((x) => x.index));
  const state = a.state();
  const rest = [a.next() ?? a.next(), a.next() ?? a.next()].map((b) => b!.map((x) => x.index));
  const b = new ItemLoader(items, 2, { shuffle: true, seed: 3 });
  b.restore(state);
  assert.deepEqual(
    [b.next() ?? b.next(), b.next() ?? b.next()].map((x) => x!.map((y) => y.index)),
    rest,
  );
  assert.ok(a.epoch >= 1);
  assert.throws(
    () => new ItemLoader(items, 9, { shuffle: false, seed: 1 }),
    /larger than the training set/,
  );
});
