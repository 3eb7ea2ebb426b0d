import assert from "node:assert/strict";
import { computePolicyLoss } from "../policy_loss.ts";
import { assertClose } from "../test_util.ts";
import "./all.ts";

// ε_low = 0.2, ε_high = 0.3, old = 0, so x = logp. Row 0 (A = +1 on its tokens): x = 0.5 (clipped
// to 0.3: upper clip), x = -0.4 (not clipped for A > 0: min(x, clamp(x)) = x). Row 1 (A = -2):
// x = -0.5 (clipped to -0.2: lower clip), x = 0.1. Row 2: all padding.
const inputs = {
  R: 2,
  oldLogProb: new Float64Array([0, 0, 0, 0, 0, 0]),
  logProb: new Float64Array([0.5, -0.4, -0.5, 0.1, NaN, NaN]),
  advantages: new Float64Array([1, 1, -2, -2, 3, 3]),
  responseMask: new Float32Array([1, 1, 1, 1, 0, 0]),
};

Deno.test("geo_mean: per-sequence geometric mean, mean over every row, by hand", () => {
  const l0 = -1 * Math.exp((0.3 - 0.4) / 2), l1 = 2 * Math.exp((-0.2 + 0.1) / 2);
  for (const lossAggMode of ["token-mean", "seq-mean-token-mean"] as const) {
    const o = { clipRatioLow: 0.2, clipRatioHigh: 0.3, lossAggMode };
    const out = computePolicyLoss("geo_mean", inputs, o);
    assertClose(out.pgLoss, (l0 + l1 + 0) / 3, 1e-12); // the empty row counts, as torch.mean
    // dL_b/dx_t = L_b / n_b where the clip passes the gradient, over 3 rows
    assertClose(out.gradLogProb, [0, l0 / 2 / 3, 0, l1 / 2 / 3, 0, 0], 1e-12);
    // verl counts x outside [-ε_low, ε_high] whichever side: 0.5 and -0.4 for A > 0
    assertClose(out.metrics["actor/pg_clipfrac"]!, 2 / 4, 1e-12);
    assertClose(out.metrics["actor/pg_clipfrac_lower"]!, 1 / 4, 1e-12);
    assertClose(out.metrics["actor/ppo_kl"]!, -(0.5 - 0.4 - 0.5 + 0.1) / 4, 1e-12);
    assert.equal(out.pgLosses, undefined);
  }
  // micro-batches of a mini-batch share its row count; dp ranks need it
  const clip = { clipRatioLow: 0.2, clipRatioHigh: 0.3 };
  const global = computePolicyLoss("geo_mean", inputs, { ...clip, globalBatchSize: 6, dpSize: 2 });
  assertClose(global.pgLoss, (l0 + l1) / 6 * 2, 1e-12);
  assert.throws(() => computePolicyLoss("geo_mean", inputs, { dpSize: 2 }), /globalBatchSize/);
});
