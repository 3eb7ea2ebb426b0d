import { seededRandom, shuffled } from "../tensor/mod.ts";
import assert from "node:assert/strict";
import { learningRate, reduceMetrics } from "./util.ts";

Deno.test("learning-rate schedules: warmup, constant, cosine to the floor", () => {
  const o = { lr: 1, totalSteps: 10, warmupSteps: 2, style: "cosine" as const, minLrRatio: 0.1 };
  assert.equal(learningRate(0, o), 0.5);
  assert.equal(learningRate(1, o), 1);
  assert.equal(learningRate(2, o), 1); // start of decay: cos(0) = 1
  // halfway through the decay (step 6 of 2..10): 0.1 + 0.9 * 0.5 = 0.55
  assert.ok(Math.abs(learningRate(6, o) - 0.55) < 1e-12);
  assert.ok(Math.abs(learningRate(10, o) - 0.1) < 1e-12);
  assert.equal(learningRate(7, { ...o, style: "constant" }), 1);
});

Deno.test("seeded shuffles repeat for the same seed and differ across seeds", () => {
  const a = shuffled([...Array(20).keys()], seededRandom(1, 2));
  assert.deepEqual(a, shuffled([...Array(20).keys()], seededRandom(1, 2)));
  assert.notDeepEqual(a, shuffled([...Array(20).keys()], seededRandom(1, 3)));
  assert.deepEqual([...a].sort((x, y) => x - y), [...Array(20).keys()]);
});

Deno.test("reduceMetrics averages per-micro-batch lists", () => {
  assert.deepEqual(reduceMetrics({ a: [1, 2, 3], b: [] }), { a: 2 });
});
