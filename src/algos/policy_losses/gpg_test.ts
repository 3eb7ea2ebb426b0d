import assert from "node:assert/strict";
import { computePolicyLoss } from "../policy_loss.ts";
import { assertClose } from "../test_util.ts";
import "./all.ts";

Deno.test("gpg: -A·logp in every agg mode, no metrics of its own", () => {
  const inputs = {
    R: 3,
    oldLogProb: new Float64Array([9, 9, 9, 9, 9, 9]), // unused: gpg has no ratio
    logProb: new Float64Array([-1, -2, -0.5, -3, NaN, NaN]),
    advantages: new Float64Array([2, 2, -1, 0.5, 7, 7]),
    responseMask: new Float32Array([1, 1, 1, 1, 0, 0]),
  };
  // token losses 2, 4, -0.5 | 1.5
  const cases = {
    "token-mean": [(2 + 4 - 0.5 + 1.5) / 4, [-2 / 4, -2 / 4, 1 / 4, -0.5 / 4]],
    "seq-mean-token-sum": [(5.5 + 1.5) / 2, [-1, -1, 0.5, -0.25]],
    "seq-mean-token-mean": [(5.5 / 3 + 1.5) / 2, [-1 / 3, -1 / 3, 1 / 6, -0.25]],
    // divided by the horizon R = 3 alone, as verl's agg_loss
    "seq-mean-token-sum-norm": [(5.5 + 1.5) / 3, [-2 / 3, -2 / 3, 1 / 3, -0.5 / 3]],
  } as const;
  for (const [lossAggMode, [loss, grad]] of Object.entries(cases)) {
    const out = computePolicyLoss("gpg", inputs, {
      lossAggMode: lossAggMode as keyof typeof cases,
    });
    assertClose(out.pgLoss, loss, 1e-12, lossAggMode);
    assertClose(out.gradLogProb, [...grad, 0, 0], 1e-12, lossAggMode);
    assert.deepEqual(out.metrics, {});
  }
});
