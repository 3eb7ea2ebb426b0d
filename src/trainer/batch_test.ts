import assert from "node:assert/strict";
import { type GenBatch, responseScatter, responseSlice, sequenceInputs } from "./batch.ts";

function batch(): GenBatch {
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

Deno.test("sequence inputs: tool tokens inside a conversation are attended, never targets", () => {
  // Row 0: policy 10, tool 11 12 (mask 0), policy 13, then padding.
  const b: GenBatch = {
    ...batch(),
    size: 1,
    responseLength: 5,
    prompts: Int32Array.from([0, 5, 6]),
    promptMask: Int32Array.from([0, 1, 1]),
    responses: Int32Array.from([10, 11, 12, 13, 0]),
    responseMask: Int32Array.from([1, 0, 0, 1, 0]),
  };
  const s = sequenceInputs(b, [0]);
  assert.deepEqual([...s.attentionMask], [0, 1, 1, 1, 1, 1, 1, 0]);
  assert.deepEqual([...s.positionIds], [0, 0, 1, 2, 3, 4, 5, 5]);
  assert.deepEqual([...s.targets], [-100, -100, 10, -100, -100, 13, -100, -100]);
});

Deno.test("response slice and scatter are inverse on the response positions", () => {
  const full = Float32Array.from({ length: 12 }, (_, i) => i);
  const part = responseSlice(full, 2, 3, 3);
  assert.deepEqual([...part], [2, 3, 4, 8, 9, 10]);
  assert.deepEqual([...responseScatter(part, 2, 3, 3)], [0, 0, 2, 3, 4, 0, 0, 0, 8, 9, 10, 0]);
});
