import assert from "node:assert/strict";
import { computePolicyLoss } from "../policy_loss.ts";
import { assertClose } from "../test_util.ts";
import { covInputs } from "./test_inputs.ts";
import "./all.ts";

// covInputs: A = [1, 1, 1, -1, -1], cov = [0.96, -0.64, 0.16, -1.44, 2.16],
// x = logp - old = [0.1, -0.2, 0.3, 0.05, -0.15], then padding.
const x = [0.1, -0.2, 0.3, 0.05, -0.15], A = [1, 1, 1, -1, -1];

Deno.test("kl_cov: |log ratio| penalty on the top-covariance tokens, by hand", () => {
  // kl_cov_ratio 0.4 of 5 tokens -> the 2 largest covariances: t4 (2.16) and t0 (0.96)
  const chosen = [1, 0, 0, 0, 1], coef = 0.5;
  const loss = x.map((v, i) => -A[i] * Math.exp(v) + chosen[i] * coef * Math.abs(v));
  const grad = x.map((v, i) => -A[i] * Math.exp(v) + chosen[i] * coef * Math.sign(v));
  const out = computePolicyLoss("kl_cov", covInputs, { klCovRatio: 0.4, ppoKlCoef: coef });
  assertClose(out.pgLoss, loss.reduce((a, b) => a + b) / 5, 1e-12);
  assertClose(out.gradLogProb, [...grad.map((g) => g / 5), 0], 1e-12);
  assertClose(out.pgLosses!.slice(0, 5), loss, 1e-12);
  assert.deepEqual(Object.keys(out.metrics), ["actor/ppo_kl"]);
  assertClose(out.metrics["actor/ppo_kl"]!, x.reduce((a, v) => a + Math.abs(v), 0) / 5, 1e-12);
  // the minimum of one token: 0.0002 of 5 -> t4 alone
  const one = computePolicyLoss("kl_cov", covInputs, { ppoKlCoef: coef });
  const only4 = x.map((v, i) => -A[i] * Math.exp(v) + (i === 4 ? coef * Math.abs(v) : 0));
  assertClose(one.pgLoss, only4.reduce((a, b) => a + b) / 5, 1e-12);
});
