import assert from "node:assert/strict";
import { truncateToolResponse } from "./truncate.ts";

Deno.test("tool replies are cut on the side verl cuts", () => {
  const text = "abcdefghij";
  assert.equal(truncateToolResponse(text, 10, "middle"), text);
  assert.equal(truncateToolResponse(text, 4, "left"), "abcd...(truncated)");
  assert.equal(truncateToolResponse(text, 4, "right"), "(truncated)...ghij");
  assert.equal(truncateToolResponse(text, 4, "middle"), "ab...(truncated)...ij");
  assert.equal(truncateToolResponse(text, 5, "middle"), "ab...(truncated)...ij");
  assert.equal(truncateToolResponse(text, 1, "middle"), "...(truncated)...");
});
