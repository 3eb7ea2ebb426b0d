import assert from "node:assert/strict";
import { responseRows } from "./response_rows.ts";

Deno.test("responseRows: tokens then pad, mask through the last token, log-probs 0 after", () => {
  const rows = responseRows(
    [
      {
        tokens: Int32Array.of(5, 6, 2),
        logProbs: Float32Array.of(-1, -2, -3),
        finishReason: "stop",
      },
      {
        tokens: Int32Array.of(7, 8, 9, 4),
        logProbs: Float32Array.of(-4, -5, -6, -7),
        finishReason: "length",
      },
    ],
    { responseLength: 4, padTokenId: 1, logProbs: true },
  );
  assert.deepEqual([...rows.responses], [5, 6, 2, 1, 7, 8, 9, 4]);
  assert.deepEqual([...rows.responseMask], [1, 1, 1, 0, 1, 1, 1, 1]);
  assert.deepEqual([...rows.logProbs!], [-1, -2, -3, 0, -4, -5, -6, -7]);
  const plain = responseRows([{ tokens: Int32Array.of(3), finishReason: "stop" }], {
    responseLength: 2,
    padTokenId: 0,
    logProbs: false,
  });
  assert.equal(plain.logProbs, undefined);
  assert.throws(
    () =>
      responseRows([{ tokens: Int32Array.of(1, 2, 3), finishReason: "length" }], {
        responseLength: 2,
        padTokenId: 0,
        logProbs: false,
      }),
    /result 0 has 3 tokens, more than 2/,
  );
  assert.throws(
    () =>
      responseRows([{ tokens: Int32Array.of(1), finishReason: "stop" }], {
        responseLength: 2,
        padTokenId: 0,
        logProbs: true,
      }),
    /result 0 has no log-probs/,
  );
});
