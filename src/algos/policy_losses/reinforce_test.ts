import assert from "node:assert/strict";
import { computePolicyLoss } from "../policy_loss.ts";
import { assertClose, ratioBatch } from "../test_util.ts";
import "./all.ts";

// rollout = -1 everywhere; x = logp - rollout: row 0 [ln 1.5, ln 0.5], row 1 [ln 3, padding]
const { lp, inputs, advantages: a } = ratioBatch([1.5, 0.5, 3]);
const kl = -Math.log(1.5 * 0.5 * 3) / 3;

Deno.test("reinforce: -A·w·logp with token, sequence and no IS weights, by hand", () => {
  const cases: [("token" | "sequence" | null), number[]][] = [
    [null, [1, 1, 1]],
    ["token", [1.5, 0.5, 2]], // 3 truncated at C = 2
    ["sequence", [0.75, 0.75, 2]], // row 0: 1.5 * 0.5; row 1: 3 truncated
  ];
  for (const [rolloutIs, w] of cases) {
    const out = computePolicyLoss("reinforce", inputs, { rolloutIs, rolloutIsThreshold: 2 });
    const losses = lp.map((l, i) => -w[i] * a[i] * l);
    assertClose(out.pgLoss, (losses[0] + losses[1] + losses[2]) / 3, 1e-12);
    assertClose(out.gradLogProb, [...w.map((x, i) => -x * a[i] / 3), 0], 1e-12);
    assert.deepEqual(Object.keys(out.metrics), ["actor/ppo_kl"]);
    assertClose(out.metrics["actor/ppo_kl"]!, kl, 1e-12);
  }
});

Deno.test("reinforce: the weights are detached (the gradient is -A·w, not d(w·logp))", () => {
  // Finite differences of the surrogate with w held at the evaluation point equal the gradient;
  // letting w move with logp gives a different slope, which the check would catch.
  const o = { rolloutIs: "token" as const, rolloutIsThreshold: 5 };
  const out = computePolicyLoss("reinforce", inputs, o);
  const base = Float64Array.from(inputs.logProb), h = 1e-6;
  for (let i = 0; i < 3; i++) {
    const f = (d: number, detached: boolean) => {
      const x = base.slice();
      x[i] += d;
      const det = detached ? base : x;
      return computePolicyLoss("reinforce", { ...inputs, logProb: x }, {
        ...o,
        detachedLogProb: det,
      }).pgLoss;
    };
    const fd = (f(h, true) - f(-h, true)) / (2 * h);
    assertClose(out.gradLogProb[i], fd, 1e-6);
    const moving = (f(h, false) - f(-h, false)) / (2 * h);
    assert.ok(Math.abs(moving - fd) > 1e-3, `token ${i}: w depends on logp`);
  }
});
