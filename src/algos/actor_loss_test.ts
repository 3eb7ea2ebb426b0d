import assert from "node:assert/strict";
import { computeActorLoss } from "./actor_loss.ts";
import { assertClose, finiteDiff, rng } from "./test_util.ts";

Deno.test("actor loss: entropy bonus and KL loss terms by hand", () => {
  // A = 0 -> pg_loss = 0. token-mean over 2 tokens (w = 1/2).
  // entropy [1, 3] -> agg 2; coeff 0.01 -> -0.02
  // kl ("kl"): x = logp - ref = [0.5, 0] -> agg 0.25; coef 0.1 -> +0.025; total 0.005
  // d/dlogp = 0.1 · 1/2 · 1 = 0.05 per token; d/dentropy = -0.01 · 1/2 = -0.005
  const out = computeActorLoss({
    R: 2,
    oldLogProb: new Float64Array([-1, -2]),
    logProb: new Float64Array([-1, -2]),
    advantages: new Float64Array([0, 0]),
    responseMask: new Float32Array([1, 1]),
    entropy: new Float64Array([1, 3]),
    refLogProb: new Float64Array([-1.5, -2]),
  }, { entropyCoeff: 0.01, useKlLoss: true, klLossCoef: 0.1, klLossType: "kl" });
  assertClose(out.loss, 0.005, 1e-12);
  assertClose(out.gradLogProb, [0.05, 0.05], 1e-12);
  assertClose(out.gradEntropy!, [-0.005, -0.005], 1e-12);
  assertClose(out.metrics["actor/entropy"], 2);
  assertClose(out.metrics["actor/kl_loss"], 0.25);
  assert.equal(out.metrics["actor/kl_coef"], 0.1);
  assert.equal(out.metrics["actor/pg_loss"], 0);
});

Deno.test("actor loss: gradients w.r.t. logProb and entropy match finite differences (f64)", () => {
  const r = rng(21), R = 5, B = 3, n = R * B;
  const oldLogProb = new Float64Array(n).map(() => -0.5 - r());
  const base = oldLogProb.map((o) => o + (r() * 0.8 - 0.4));
  const inputs = {
    R,
    oldLogProb,
    advantages: new Float64Array(n).map(() => r() * 2 - 1),
    responseMask: new Float32Array(n).map(() => (r() < 0.7 ? 1 : 0)),
    entropy: new Float64Array(n).map(() => r() * 3),
    refLogProb: new Float64Array(n).map(() => -0.5 - r()),
  };
  for (const lossAggMode of ["token-mean", "seq-mean-token-sum-norm"] as const) {
    const o = { lossAggMode, entropyCoeff: 0.03, useKlLoss: true, klLossCoef: 0.2 };
    const out = computeActorLoss({ ...inputs, logProb: base }, o);
    const fdLogp = finiteDiff((x) => computeActorLoss({ ...inputs, logProb: x }, o).loss, base);
    assertClose(out.gradLogProb, fdLogp, 1e-6, `${lossAggMode} d/dlogp`);
    const fdEnt = finiteDiff(
      (e) => computeActorLoss({ ...inputs, logProb: base, entropy: e }, o).loss,
      inputs.entropy.slice(),
    );
    assertClose(out.gradEntropy!, fdEnt, 1e-6, `${lossAggMode} d/dentropy`);
  }
});

Deno.test("actor loss: missing entropy / ref log-probs are errors", () => {
  const base = {
    R: 1,
    oldLogProb: new Float32Array([0]),
    logProb: new Float32Array([0]),
    advantages: new Float32Array([1]),
    responseMask: new Float32Array([1]),
  };
  assert.throws(() => computeActorLoss(base, { entropyCoeff: 0.1 }), /entropy/);
  assert.throws(() => computeActorLoss(base, { useKlLoss: true }), /refLogProb/);
  assert.throws(() => computeActorLoss(base, { policyLoss: "clip" }), /valid names: vanilla, gspo/);
});
