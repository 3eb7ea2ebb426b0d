import assert from "node:assert/strict";
import { overlongPenalty } from "./overlong.ts";

Deno.test("overlong penalty: 0 up to max - len, then linear down to -penalty_factor", () => {
  const o = { len: 10, penaltyFactor: 0.5, log: false, maxResponseLength: 30 };
  // expected = 20: L = 20 -> exceed 0 -> 0; L = 25 -> -5/10·0.5 = -0.25; L = 30 -> -0.5
  const cases: [number, number][] = [[1, 0], [20, 0], [21, -0.05], [25, -0.25], [30, -0.5]];
  for (const [L, p] of cases) assert.ok(Math.abs(overlongPenalty(L, o) - p) < 1e-12, `L=${L}`);
  // never positive: a short response gets min(positive, 0) = 0
  assert.equal(Math.max(0, overlongPenalty(3, o)), 0);
});
