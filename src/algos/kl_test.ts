import assert from "node:assert/strict";
import {
  AdaptiveKLController,
  applyKlPenalty,
  createKlController,
  FixedKLController,
  klControllerFromState,
  klPenalty,
  klPenaltyGrad,
} from "./kl.ts";
import { assertClose, assertFinite, finiteDiff, sum } from "./test_util.ts";

// x = logprob - ref with ref = -1 everywhere.
const xs = [0.5, -1, 0, -29, 24, 12];
const ref = new Float64Array(xs.length).fill(-1);
const logp = new Float64Array(xs.map((x) => x - 1));

Deno.test("kl estimators: hand-computed values incl. k3 clamps", () => {
  assertClose(klPenalty(logp, ref, "kl"), xs, 1e-12);
  assertClose(klPenalty(logp, ref, "k1"), xs, 1e-12);
  assertClose(klPenalty(logp, ref, "abs"), [0.5, 1, 0, 29, 24, 12], 1e-12);
  // x²/2
  assertClose(klPenalty(logp, ref, "mse"), [0.125, 0.5, 0, 420.5, 288, 72], 1e-12);
  // k3 = e^u - u - 1, u = clamp(-x, -20, 20):
  //  x=.5: e^-.5 + .5 - 1 = 0.6065306597 - 0.5 = 0.1065306597
  //  x=-1: e - 2 = 0.7182818285;  x=0: 0
  //  x=-29: u=20, e^20 - 21 ≫ 10 -> 10;  x=24: u=-20, e^-20 + 19 ≈ 19 -> 10;  x=12: e^-12 + 11 -> 10
  const k3 = [0.1065306597, 0.7182818285, 0, 10, 10, 10];
  assertClose(klPenalty(logp, ref, "low_var_kl"), k3, 1e-9);
  assertClose(klPenalty(logp, ref, "k3"), k3, 1e-9);
});

Deno.test("straight-through '+' variants: base value, k2 gradient", () => {
  for (const base of ["kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3"]) {
    assertClose(klPenalty(logp, ref, `${base}+`), klPenalty(logp, ref, base), 0, base);
    assertClose(klPenaltyGrad(logp, ref, `${base}+`), xs, 1e-12, `${base}+ grad`);
  }
});

Deno.test("kl gradients: hand values and central finite differences (f64)", () => {
  // k1: 1; abs: sign(x); k2: x; k3: 1 - e^(-x) inside the clamps, 0 where a clamp is active
  assertClose(klPenaltyGrad(logp, ref, "k1"), [1, 1, 1, 1, 1, 1]);
  assertClose(klPenaltyGrad(logp, ref, "abs"), [1, -1, 0, -1, 1, 1]);
  assertClose(klPenaltyGrad(logp, ref, "k2"), xs, 1e-12);
  assertClose(klPenaltyGrad(logp, ref, "k3"), [1 - Math.exp(-0.5), 1 - Math.E, 0, 0, 0, 0], 1e-9);
  // FD away from kinks/clamps: sum_i est(x_i) has gradient est'(x_i).
  const lp = new Float64Array([-0.3, -1.7, -2.2, -0.9]);
  const rf = new Float64Array([-0.5, -1.1, -2.9, -0.2]);
  for (const type of ["kl", "abs", "mse", "low_var_kl"]) {
    const fd = finiteDiff((x) => sum(klPenalty(x, rf, type)), lp);
    assertClose(klPenaltyGrad(lp, rf, type), fd, 1e-7, type);
  }
  const fdK2 = finiteDiff((x) => sum(klPenalty(x, rf, "k2")), lp);
  assertClose(klPenaltyGrad(lp, rf, "k3+"), fdK2, 1e-7, "k3+ vs FD of k2");
});

Deno.test("unknown KL type lists valid names", () => {
  assert.throws(
    () => klPenalty(logp, ref, "k4"),
    /unknown KL estimator "k4"; valid names: kl, kl\+, k1/,
  );
});

Deno.test("applyKlPenalty: masked KL, per-sequence mean then batch mean, padding-safe", () => {
  // row0: old [-1,-2,-3], ref [-1.5,-1,-2], mask [1,0,1] -> x [.5, -1, -1], kld·mask [.5, 0, -1]
  //   scores [0,0,1], β = 0.1 -> rewards [-0.05, 0, 1.1]; per-seq mean (.5 - 1)/2 = -0.25
  // row1: all padding with NaN log-probs -> kld 0, rewards = scores, per-seq mean 0
  // currentKl = (-0.25 + 0) / 2 = -0.125
  const out = applyKlPenalty({
    R: 3,
    tokenLevelScores: new Float32Array([0, 0, 1, 0, 0, 0]),
    oldLogProbs: new Float32Array([-1, -2, -3, NaN, NaN, NaN]),
    refLogProb: new Float32Array([-1.5, -1, -2, 0, 0, 0]),
    responseMask: new Float32Array([1, 0, 1, 0, 0, 0]),
  }, { beta: 0.1, klPenalty: "kl" });
  assertClose(out.kld, [0.5, 0, -1, 0, 0, 0]);
  assertClose(out.tokenLevelRewards, [-0.05, 0, 1.1, 0, 0, 0], 1e-6);
  assertClose(out.currentKl, -0.125);
  assertFinite(out.tokenLevelRewards);
  assert.deepEqual(out.metrics, {
    "actor/reward_kl_penalty": out.currentKl,
    "actor/reward_kl_penalty_coeff": 0.1,
  });
});

Deno.test("KL controllers: adaptive update arithmetic, fixed no-op, state round trip", () => {
  const c = new AdaptiveKLController(0.1, 0.1, 10000);
  // e = clip(0.2/0.1 - 1 = 1, ±0.2) = 0.2 -> β = 0.1·(1 + 0.2·64/10000) = 0.100128
  c.update(0.2, 64);
  assertClose(c.value, 0.100128, 1e-12);
  // e = 0.09/0.1 - 1 = -0.1 -> β = 0.100128·(1 - 0.1·100/10000) = 0.100128·0.999 = 0.100027872
  c.update(0.09, 100);
  assertClose(c.value, 0.100027872, 1e-12);
  const restored = klControllerFromState(JSON.parse(JSON.stringify(c.state())));
  assert.deepEqual(restored.state(), c.state());
  restored.update(1, 10);
  c.update(1, 10);
  assert.equal(restored.value, c.value);

  const f = new FixedKLController(0.05);
  f.update(10, 1000);
  assert.equal(f.value, 0.05);
  assert.throws(() => f.restore(c.state()), /adaptive/);
});

Deno.test("createKlController follows algorithm.kl_ctrl", () => {
  const a = createKlController({ type: "adaptive", kl_coef: 0.2, target_kl: 0.1, horizon: 100 });
  assert.ok(a instanceof AdaptiveKLController);
  assert.equal(a.value, 0.2);
  assert.ok(createKlController({ type: "fixed", kl_coef: 0.001 }) instanceof FixedKLController);
  assert.throws(
    () => createKlController({ type: "pid", kl_coef: 1 }),
    /valid names: fixed, adaptive/,
  );
  assert.throws(
    () => createKlController({ type: "adaptive", kl_coef: 1, target_kl: 1, horizon: 0 }),
    /horizon/,
  );
});
