import assert from "node:assert/strict";
import { computePolicyLoss } from "../policy_loss.ts";
import { assertClose, ratioBatch } from "../test_util.ts";
import "./all.ts";

Deno.test("cispo: clipped ratio weights -A·logp, by hand", () => {
  // old = -1; r = exp(logp + 1): t0 r = 1.5 (clipped to 1.28), t1 r = 0.5 (clipped to 0.8),
  // t2 r = 1.1 (inside), t3 padding
  const { lp, inputs, advantages: a } = ratioBatch([1.5, 0.5, 1.1]);
  const w = [1.28, 0.8, 1.1];
  const out = computePolicyLoss("cispo", inputs, { clipRatioLow: 0.2, clipRatioHigh: 0.28 });
  const losses = lp.map((l, i) => -w[i] * a[i] * l);
  assertClose(out.pgLoss, (losses[0] + losses[1] + losses[2]) / 3, 1e-12);
  assertClose(out.gradLogProb, [...w.map((x, i) => -x * a[i] / 3), 0], 1e-12);
  assertClose(out.metrics["actor/pg_clipfrac"]!, 2 / 3, 1e-12);
  assertClose(out.metrics["actor/ppo_kl"]!, -Math.log(1.5 * 0.5 * 1.1) / 3, 1e-12);
  assert.equal(out.metrics["actor/pg_clipfrac_lower"], 0);
});
