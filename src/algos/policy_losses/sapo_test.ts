import assert from "node:assert/strict";
import { computePolicyLoss } from "../policy_loss.ts";
import { assertClose } from "../test_util.ts";
import "./all.ts";

const sig = (x: number) => 1 / (1 + Math.exp(-x));

// old = 0, so r = exp(logp). Row 0: r = 1.5 with A = +1 (τ_pos = 1) and r = 0.8 with A = -2
// (τ_neg = 1.05); row 1: A = 0 (τ_neg), then padding with garbage.
const inputs = {
  R: 2,
  oldLogProb: new Float64Array([0, 0, 0, 0]),
  logProb: new Float64Array([Math.log(1.5), Math.log(0.8), Math.log(1.2), NaN]),
  advantages: new Float64Array([1, -2, 0, NaN]),
  responseMask: new Float32Array([1, 1, 1, 0]),
};

Deno.test("sapo: sigmoid gate by hand; seq-mean-token-mean whatever loss_agg_mode", () => {
  const s0 = sig(1 * 0.5), s1 = sig(1.05 * -0.2);
  const l0 = -s0 * 4 * 1, l1 = -(s1 * 4 / 1.05) * -2, l2 = 0; // A = 0: no loss
  // rows: (l0 + l1) / 2 and l2 / 1, then the mean of 2 rows; weights 1/4, 1/4, 1/2
  const loss = ((l0 + l1) / 2 + l2) / 2;
  const g0 = -1 * 4 * s0 * (1 - s0) * 1.5, g1 = 2 * 4 * s1 * (1 - s1) * 0.8;
  for (const lossAggMode of ["token-mean", "seq-mean-token-sum"] as const) {
    const out = computePolicyLoss("sapo", inputs, { lossAggMode, tauPos: 1, tauNeg: 1.05 });
    assertClose(out.pgLoss, loss, 1e-12);
    assertClose(out.gradLogProb, [g0 / 4, g1 / 4, 0, 0], 1e-12);
    assert.deepEqual(out.metrics["actor/pg_clipfrac"], 0);
    assert.deepEqual(out.metrics["actor/pg_clipfrac_lower"], 0);
    assertClose(out.metrics["actor/ppo_kl"]!, -Math.log(1.5 * 0.8 * 1.2) / 3, 1e-12);
  }
  // the temperatures change the loss; tau = 0 is an error
  const hot = computePolicyLoss("sapo", inputs, { tauPos: 3, tauNeg: 3 });
  assert.ok(Math.abs(hot.pgLoss - loss) > 1e-3);
  assert.throws(
    () => computePolicyLoss("sapo", inputs, { tauNeg: 0 }),
    /tau_pos and tau_neg must be > 0/,
  );
});
