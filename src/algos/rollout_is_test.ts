import assert from "node:assert/strict";
import { rolloutIsWeights } from "./rollout_is.ts";

Deno.test("rollout IS: token weights are exp(old - rollout) truncated at the threshold", () => {
  const old = Float32Array.from([-1, -1, -2, 0]);
  const rollout = Float32Array.from([-1.5, -0.5, -1, 0]);
  const mask = Float32Array.from([1, 1, 1, 0]);
  const { weights, metrics } = rolloutIsWeights(old, rollout, mask, {
    R: 4,
    level: "token",
    threshold: 1.5,
  });
  assert.ok(Math.abs(weights[0] - 1.5) < 1e-6); // exp(0.5) = 1.65 -> 1.5
  assert.ok(Math.abs(weights[1] - Math.exp(-0.5)) < 1e-6);
  assert.ok(Math.abs(weights[2] - Math.exp(-1)) < 1e-6);
  assert.equal(weights[3], 0);
  assert.ok(Math.abs(metrics["rollout_corr/rollout_is_clipped_frac"] - 1 / 3) < 1e-6);
  assert.ok(Math.abs(metrics["rollout_corr/rollout_is_max"] - 1.5) < 1e-6);
});

Deno.test("rollout IS: sequence weights share exp(sum of log ratios) over a row", () => {
  const old = Float32Array.from([-1, -1, -3, -3]);
  const rollout = Float32Array.from([-1.2, -1.1, -2, -2]);
  const mask = Float32Array.from([1, 1, 1, 1]);
  const { weights } = rolloutIsWeights(old, rollout, mask, {
    R: 2,
    level: "sequence",
    threshold: 2,
  });
  assert.ok(Math.abs(weights[0] - Math.exp(0.3)) < 1e-6);
  assert.equal(weights[0], weights[1]);
  assert.ok(Math.abs(weights[2] - Math.exp(-2)) < 1e-6);
  // Huge log ratios stay finite (clamped before exp) and truncated.
  const big = rolloutIsWeights(
    Float32Array.of(0),
    Float32Array.of(-1000),
    Float32Array.of(1),
    { R: 1, level: "token", threshold: 2 },
  );
  assert.equal(big.weights[0], 2);
});
