import assert from "node:assert/strict";
import { computePolicyLoss } from "../policy_loss.ts";
import { assertClose } from "../test_util.ts";
import { covInputs } from "./test_inputs.ts";
import "./all.ts";

// covInputs: cov = [0.96, -0.64, 0.16, -1.44, 2.16], x = [0.1, -0.2, 0.3, 0.05, -0.15],
// A = [1, 1, 1, -1, -1]. With ε = 0.2, t2 (r = e^0.3 > 1.2, A > 0) is clipped by the PPO clip.
const x = [0.1, -0.2, 0.3, 0.05, -0.15], A = [1, 1, 1, -1, -1];
const r = x.map(Math.exp);

Deno.test("clip_cov: the chosen candidate loses loss and gradient, others are PPO-clip", () => {
  // bounds (0.5, 2): t0 is the only candidate (t4 is above, t2 already clipped); quota 1
  const out = computePolicyLoss("clip_cov", covInputs, { clipCovLb: 0.5, clipCovUb: 2, seed: 9 });
  const loss = [0, -r[1], -1.2, r[3], r[4]];
  const grad = [0, -r[1], 0, r[3], r[4]];
  assertClose(out.pgLoss, loss.reduce((a, b) => a + b) / 5, 1e-12);
  assertClose(out.gradLogProb, [...grad.map((g) => g / 5), 0], 1e-12);
  assertClose(out.metrics["actor/pg_clipfrac"]!, 1 / 5, 1e-12);
  assertClose(out.metrics["actor/ppo_kl"]!, -x.reduce((a, b) => a + b) / 5, 1e-12);
  assert.deepEqual(Object.keys(out.metrics).sort(), ["actor/pg_clipfrac", "actor/ppo_kl"]);
});

Deno.test("clip_cov: the quota is drawn from the candidates by the seed", () => {
  // bounds (-2, 2): candidates t0, t1, t3; quota floor(0.4·5) = 2
  const unclipped = [-A[0] * r[0], -A[1] * r[1], -1.2, -A[3] * r[3], -A[4] * r[4]];
  const seen = new Set<string>();
  for (let seed = 0; seed < 40; seed++) {
    const o = { clipCovRatio: 0.4, clipCovLb: -2, clipCovUb: 2, seed };
    const out = computePolicyLoss("clip_cov", covInputs, o);
    const cut = [0, 1, 3].filter((i) => out.pgLosses![i] === 0);
    assert.equal(cut.length, 2, `seed ${seed}`);
    const kept = unclipped.reduce((a, l, i) => a + (cut.includes(i) ? 0 : l), 0);
    assertClose(out.pgLoss, kept / 5, 1e-12);
    assertClose(out.metrics["actor/pg_clipfrac"]!, 2 / 5, 1e-12);
    seen.add(cut.join());
  }
  assert.equal(seen.size, 3, "every pair of candidates occurs");
});
