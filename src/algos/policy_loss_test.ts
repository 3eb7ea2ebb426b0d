import assert from "node:assert/strict";
import { computePolicyLoss, POLICY_LOSSES } from "./policy_loss.ts";
import "./policy_losses/all.ts";
import { LOSS_AGG_MODES } from "./agg.ts";
import { assertClose, assertFinite, finiteDiff, rng } from "./test_util.ts";

// old = 0, so logp = ln(ratio). R = 3; row2 is all padding with NaN log-probs.
//  t0 r=1.1 A=+1: L1=-1.1, L2=-1.1            -> -1.1, unclipped, dL/dlogp = -A·r = -1.1
//  t1 r=1.5 A=+1: L1=-1.5, L2=-1.2 (> L1)     -> -1.2, clipped, grad 0
//  t2 r=0.5 A=+1: L1=-0.5, L2=-0.8            -> -0.5, unclipped, grad -0.5
//  t3 r=0.5 A=-1: L1=0.5, L2=0.8 (> L1)       -> 0.8 (< -A·c = 3), clipped, grad 0
//  t4 r=4   A=-1: L1=4, L2=1.2                -> max 4 > 3 -> dual-clip 3, grad 0, lower
//  t5 masked (garbage)
const vanillaIn = {
  R: 3,
  oldLogProb: new Float64Array([0, 0, 0, 0, 0, 0, 0, 0, 0]),
  logProb: new Float64Array([
    Math.log(1.1),
    Math.log(1.5),
    Math.log(0.5),
    Math.log(0.5),
    Math.log(4),
    7,
    NaN,
    NaN,
    NaN,
  ]),
  advantages: new Float64Array([1, 1, 1, -1, -1, -1, 5, 5, 5]),
  responseMask: new Float32Array([1, 1, 1, 1, 1, 0, 0, 0, 0]),
};

Deno.test("vanilla: clip, dual-clip, clip fractions, ppo_kl and gradient by hand", () => {
  const out = computePolicyLoss("vanilla", vanillaIn, { clipRatio: 0.2, clipRatioC: 3 });
  // token-mean over 5 valid: (-1.1 - 1.2 - 0.5 + 0.8 + 3)/5 = 1.0/5 = 0.2
  assertClose(out.pgLoss, 0.2, 1e-12);
  assertClose(out.pgLosses!.slice(0, 5), [-1.1, -1.2, -0.5, 0.8, 3], 1e-12);
  assertClose(out.metrics["actor/pg_clipfrac"]!, 2 / 5); // t1, t3
  assertClose(out.metrics["actor/pg_clipfrac_lower"]!, 1 / 5); // t4
  // ppo_kl = mean(-(logp - old)) = -ln(1.1·1.5·0.5·0.5·4)/5 = -ln(1.65)/5
  assertClose(out.metrics["actor/ppo_kl"]!, -Math.log(1.65) / 5, 1e-12);
  // w = 1/5: [-1.1/5, 0, -0.5/5, 0, 0, 0, ...]
  assertClose(out.gradLogProb, [-0.22, 0, -0.1, 0, 0, 0, 0, 0, 0], 1e-12);
  assertFinite(out.gradLogProb);
});

Deno.test("vanilla: asymmetric clip_ratio_low/high", () => {
  // ε_high = 0.28 moves t1 to L2 = -1.28: (-1.1 - 1.28 - 0.5 + 0.8 + 3)/5 = 0.184
  const out = computePolicyLoss("vanilla", vanillaIn, { clipRatioLow: 0.2, clipRatioHigh: 0.28 });
  assertClose(out.pgLoss, 0.184, 1e-12);
});

Deno.test("vanilla: clip_ratio_c must exceed 1", () => {
  assert.throws(() => computePolicyLoss("vanilla", vanillaIn, { clipRatioC: 1 }), /must be > 1/);
});

Deno.test("vanilla: gradient matches central finite differences in every agg mode (f64)", () => {
  const r = rng(5), R = 6, B = 4, n = R * B;
  const inputs = {
    R,
    oldLogProb: new Float64Array(n).map(() => -1 - r()),
    logProb: new Float64Array(n),
    advantages: new Float64Array(n).map(() => r() * 4 - 2),
    responseMask: new Float32Array(n).map(() => (r() < 0.75 ? 1 : 0)),
  };
  // ratios spread over [e^-1, e^1] so clipped, unclipped and dual-clipped tokens all occur
  inputs.logProb = inputs.oldLogProb.map((o) => o + (r() * 2 - 1));
  inputs.responseMask.fill(0, n - R, n); // an all-padding row
  const base = inputs.logProb.slice();
  for (const lossAggMode of LOSS_AGG_MODES) {
    const o = { clipRatio: 0.2, clipRatioC: 1.5, lossAggMode };
    const out = computePolicyLoss("vanilla", { ...inputs, logProb: base }, o);
    const m = out.metrics;
    assert.ok(
      m["actor/pg_clipfrac"]! > 0 && m["actor/pg_clipfrac_lower"]! > 0,
      `branches: ${m["actor/pg_clipfrac"]} ${m["actor/pg_clipfrac_lower"]}`,
    );
    const gradLogProb = out.gradLogProb;
    const fd = finiteDiff(
      (x) => computePolicyLoss("vanilla", { ...inputs, logProb: x }, o).pgLoss,
      base,
    );
    assertClose(gradLogProb, fd, 1e-6, lossAggMode);
  }
});

// GSPO, old = 0, ε = 0.2. row0 logp [0.2, 0.4] A=+1: log s = 0.3, s = e^0.3 = 1.3498588
//   L1 = -1.3498588 < L2 = -1.2 -> clipped, -1.2 each, grad 0.
// row1 logp [-0.1, 5 (masked)] A=-1: log s = -0.1, s = e^-0.1 = 0.9048374 inside the range,
//   L = 0.9048374, dL/dlogp = -A·s = 0.9048374.
// seq-mean-token-mean: (-1.2 + 0.9048374)/2 = -0.1475813; weights row0 1/4, row1 1/2.
const gspoIn = {
  R: 2,
  oldLogProb: new Float64Array([0, 0, 0, 0]),
  logProb: new Float64Array([0.2, 0.4, -0.1, 5]),
  advantages: new Float64Array([1, 1, -1, -1]),
  responseMask: new Float32Array([1, 1, 1, 0]),
};

Deno.test("gspo: sequence-level ratio by hand; always seq-mean-token-mean", () => {
  for (const lossAggMode of ["seq-mean-token-mean", "token-mean"] as const) {
    const out = computePolicyLoss("gspo", gspoIn, { clipRatio: 0.2, lossAggMode });
    const s1 = Math.exp(-0.1);
    assertClose(out.pgLoss, (-1.2 + s1) / 2, 1e-12);
    assertClose(out.gradLogProb, [0, 0, 0.5 * s1, 0], 1e-12);
    assertClose(out.metrics["actor/pg_clipfrac"]!, 2 / 3);
    assertClose(out.metrics["actor/ppo_kl"]!, -(0.2 + 0.4 - 0.1) / 3, 1e-12);
    assert.equal(out.metrics["actor/pg_clipfrac_lower"], 0);
  }
});

Deno.test("gspo: gradient equals FD of the stop-gradient surrogate (f64)", () => {
  const r = rng(9), R = 5, B = 3, n = R * B;
  const oldLogProb = new Float64Array(n).map(() => -1 - r());
  const base = oldLogProb.map((o) => o + (r() * 0.6 - 0.3));
  const inputs = {
    R,
    oldLogProb,
    advantages: new Float64Array(n).map(() => r() * 2 - 1),
    responseMask: new Float32Array(n).map(() => (r() < 0.8 ? 1 : 0)),
  };
  const o = { clipRatioLow: 0.05, clipRatioHigh: 0.08 };
  const { gradLogProb } = computePolicyLoss("gspo", { ...inputs, logProb: base }, o);
  const surrogate = (x: Float64Array) =>
    computePolicyLoss("gspo", { ...inputs, logProb: x }, { ...o, detachedLogProb: base }).pgLoss;
  assertClose(gradLogProb, finiteDiff(surrogate, base.slice()), 1e-6);
  assert.ok(gradLogProb.some((g) => g !== 0), "some tokens are unclipped");
});

/** Random [B, R] inputs with ragged rows, an all-padding row and NaN on padding. */
function randomInputs(seed: number, B = 4, R = 6) {
  const r = rng(seed), n = R * B;
  const oldLogProb = new Float64Array(n).map(() => -0.5 - 2 * r());
  const logProb = oldLogProb.map((o) => o + (r() * 1.2 - 0.6));
  const responseMask = new Float32Array(n).map(() => (r() < 0.8 ? 1 : 0));
  responseMask.fill(0, R, 2 * R); // row 1 is all padding
  const pad = (x: Float64Array) => x.map((v, i) => (responseMask[i] ? v : NaN));
  return {
    R,
    oldLogProb: pad(oldLogProb),
    logProb: pad(logProb),
    advantages: pad(new Float64Array(n).map(() => r() * 4 - 2)),
    responseMask,
  };
}

// Wide covariance bounds and ratios so that clip_cov and kl_cov choose several tokens.
const COV = { clipCovRatio: 0.3, clipCovLb: -1, clipCovUb: 1, klCovRatio: 0.3, ppoKlCoef: 0.5 };

Deno.test("every policy loss: gradient equals FD of its stop-gradient surrogate, every agg mode", () => {
  for (const name of POLICY_LOSSES.names()) {
    for (const [k, lossAggMode] of LOSS_AGG_MODES.entries()) {
      const inputs = randomInputs(40 + k);
      const base = inputs.logProb.map((v) => (Number.isNaN(v) ? 0 : v));
      const o = { clipRatioLow: 0.2, clipRatioHigh: 0.28, lossAggMode, seed: 3, ...COV };
      if (k % 2) Object.assign(o, { globalBatchSize: 7, batchNumTokens: 31, dpSize: 2 });
      const out = computePolicyLoss(name, { ...inputs, logProb: base }, o);
      assertFinite([out.pgLoss, ...Object.values(out.metrics)], `${name} ${lossAggMode}`);
      const f = (x: Float64Array) =>
        computePolicyLoss(name, { ...inputs, logProb: x }, { ...o, detachedLogProb: base }).pgLoss;
      assertClose(out.gradLogProb, finiteDiff(f, base.slice()), 1e-6, `${name} ${lossAggMode}`);
      assert.ok(out.gradLogProb.some((g) => g !== 0), `${name}: some gradient flows`);
      // padding holds NaN in the inputs above: neither loss nor gradient may see it
      const withNaN = computePolicyLoss(name, inputs, o);
      assertClose(withNaN.pgLoss, out.pgLoss, 1e-12, `${name} padding`);
    }
  }
});

Deno.test("each loss reports exactly verl's metrics for it", () => {
  const want: Record<string, string[]> = {
    vanilla: ["actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"],
    gspo: ["actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"],
    sapo: ["actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"],
    gpg: [],
    clip_cov: ["actor/pg_clipfrac", "actor/ppo_kl"],
    kl_cov: ["actor/ppo_kl"],
    geo_mean: ["actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"],
    cispo: ["actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"],
    reinforce: ["actor/ppo_kl"],
  };
  assert.deepEqual(POLICY_LOSSES.names(), Object.keys(want));
  for (const name of POLICY_LOSSES.names()) {
    const out = computePolicyLoss(name, randomInputs(7), COV);
    assert.deepEqual(Object.keys(out.metrics).sort(), want[name].sort(), name);
  }
});

Deno.test("docs/architecture.md's table of losses has a row for every registered loss", () => {
  const doc = Deno.readTextFileSync(new URL("../../docs/architecture.md", import.meta.url));
  for (const name of POLICY_LOSSES.names()) {
    assert.match(doc, new RegExp(`^\\| \`${name}\`\\s+\\|`, "m"), `a row for ${name}`);
  }
});

Deno.test("unknown policy loss lists valid names", () => {
  assert.throws(
    () => computePolicyLoss("ppo", vanillaIn),
    /unknown policy loss "ppo"; valid names: vanilla, gspo, sapo, gpg, clip_cov, kl_cov, geo_mean, cispo, reinforce/,
  );
});
