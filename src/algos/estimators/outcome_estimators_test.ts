/**
 * The outcome estimators (one score per response, a group baseline) against plain loops written
 * here from verl's formulas: dict-of-lists grouping by uid, the row score the sum of every
 * position, the scalar broadcast over the response mask.
 */
import assert from "node:assert/strict";
import { computeAdvantage } from "../mod.ts";
import { assertClose, assertFinite } from "../test_util.ts";
import { maskRow, type TestBatch, testBatch } from "./test_batch.ts";

const EPS = 1e-6;

function rowScores(t: TestBatch): number[] {
  const out: number[] = [];
  for (let b = 0; b < t.B; b++) {
    let s = 0;
    for (let k = 0; k < t.R; k++) s += t.tokenLevelRewards[b * t.R + k];
    out.push(s);
  }
  return out;
}

function byUid(t: TestBatch, xs: number[]): Map<string, number[]> {
  const m = new Map<string, number[]>();
  t.uids.forEach((u, b) => m.set(u, [...(m.get(u) ?? []), xs[b]]));
  return m;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const std = (xs: number[]) =>
  Math.sqrt(xs.reduce((a, x) => a + (x - mean(xs)) ** 2, 0) / (xs.length - 1));

function broadcast(t: TestBatch, a: number[]): number[] {
  return a.flatMap((x, b) => maskRow(t, b).map((m) => x * m));
}

/** grpo: a group of one has mean 0 and std 1. */
function grpoLoop(t: TestBatch, norm: boolean): number[] {
  const s = rowScores(t), groups = byUid(t, s);
  return broadcast(
    t,
    s.map((x, b) => {
      const g = groups.get(t.uids[b])!;
      const [mu, sd] = g.length === 1 ? [0, 1] : [mean(g), std(g)];
      return norm ? (x - mu) / (sd + EPS) : x - mu;
    }),
  );
}

for (const norm of [true, false]) {
  Deno.test(`grpo (norm_adv_by_std_in_grpo=${norm}) equals the dict-of-lists loop`, () => {
    for (const seed of [1, 2, 3]) {
      const t = testBatch(seed);
      const out = computeAdvantage("grpo", t, { normAdvByStdInGrpo: norm });
      assertClose(out.advantages, grpoLoop(t, norm), 1e-9, `seed ${seed}`);
      assert.strictEqual(out.advantages, out.returns);
    }
  });
}

/** grpo_vectorized: sums S1, S2 per group; std = sqrt(max((S2 - S1²/n)/max(n-1,1), ε)). */
function grpoVectorizedLoop(t: TestBatch, norm: boolean): number[] {
  const s = rowScores(t), groups = byUid(t, s);
  return broadcast(
    t,
    s.map((x, b) => {
      const g = groups.get(t.uids[b])!, n = g.length;
      if (n === 1) return norm ? x / (1 + EPS) : x;
      const s1 = g.reduce((a, v) => a + v, 0), s2 = g.reduce((a, v) => a + v * v, 0);
      const sd = Math.sqrt(Math.max((s2 - s1 * s1 / n) / Math.max(n - 1, 1), EPS));
      return norm ? (x - s1 / n) / (sd + EPS) : x - s1 / n;
    }),
  );
}

Deno.test("grpo_vectorized equals its loop, and grpo wherever the group std is >= sqrt(ε)", () => {
  for (const norm of [true, false]) {
    for (const seed of [4, 5]) {
      const t = testBatch(seed);
      const vec = computeAdvantage("grpo_vectorized", t, { normAdvByStdInGrpo: norm });
      assertClose(vec.advantages, grpoVectorizedLoop(t, norm), 1e-9, `seed ${seed}`);
      // scores in {0, .5, 1} sums: a group's std is 0 (both give 0) or >= 0.2, above the floor
      assertClose(vec.advantages, grpoLoop(t, norm), 1e-6, `vs grpo, seed ${seed}`);
    }
  }
});

Deno.test("grpo_vectorized: the sqrt(ε) floor on the std (scores 0 and 0.001)", () => {
  // One group [0, 0.001]: var = 5e-7 < ε = 1e-6 -> std = 1e-3 (grpo: sqrt(5e-7) ≈ 7.07e-4).
  const inp = {
    R: 1,
    tokenLevelRewards: new Float64Array([0, 0.001]),
    responseMask: new Float32Array([1, 1]),
    uids: ["u", "u"],
  };
  const d = 0.0005;
  assertClose(computeAdvantage("grpo_vectorized", inp).advantages, [
    -d / (1e-3 + EPS),
    d / 1.001e-3,
  ]);
  const g = Math.sqrt(5e-7) + EPS;
  assertClose(computeAdvantage("grpo", inp).advantages, [-d / g, d / g]);
});

/** grpo_passk: best of each group gets r_max - r_2nd (/ std + ε), the others 0. */
function passkLoop(t: TestBatch, norm: boolean): number[] {
  const s = rowScores(t), a = s.map(() => 0);
  for (const u of new Set(t.uids)) {
    const idx = t.uids.flatMap((v, b) => (v === u ? [b] : []));
    const sorted = idx.map((b) => s[b]).sort((x, y) => y - x);
    const best = idx.find((b) => s[b] === sorted[0])!;
    a[best] = (sorted[0] - sorted[1]) / (norm ? std(idx.map((b) => s[b])) + EPS : 1);
  }
  return broadcast(t, a);
}

Deno.test("grpo_passk equals its loop; a group of one is an error naming the key", () => {
  for (const norm of [true, false]) {
    for (const seed of [6, 7, 8]) {
      const t = testBatch(seed, { sizes: [3, 2, 4, 2, 3], levels: [0, 0.25, 0.5, 1] });
      const out = computeAdvantage("grpo_passk", t, { normAdvByStdInGrpo: norm });
      assertClose(out.advantages, passkLoop(t, norm), 1e-9, `seed ${seed}`);
    }
  }
  // hand case: group [1, 0.25, 1]: tied maximum -> all 0; group [0, 0.5]: 0.5 / (std + ε)
  const hand = computeAdvantage("grpo_passk", {
    R: 1,
    tokenLevelRewards: new Float64Array([1, 0.25, 1, 0, 0.5]),
    responseMask: new Float32Array(5).fill(1),
    uids: ["a", "a", "a", "b", "b"],
  });
  assertClose(hand.advantages, [0, 0, 0, 0, 0.5 / (Math.sqrt(0.125) + EPS)]);
  assert.throws(
    () => computeAdvantage("grpo_passk", testBatch(1)),
    /group "g1" has 1 .*rollout\.n/,
  );
});

/** rloo: n/(n-1)·(s - mean); rloo_vectorized: same, but a group of one gets 0. */
function rlooLoop(t: TestBatch, single: "score" | "zero"): number[] {
  const s = rowScores(t), groups = byUid(t, s);
  return broadcast(
    t,
    s.map((x, b) => {
      const g = groups.get(t.uids[b])!, n = g.length;
      if (n === 1) return single === "score" ? x : 0;
      return x * n / (n - 1) - mean(g) * n / (n - 1);
    }),
  );
}

Deno.test("rloo equals its loop (a group of one keeps its score)", () => {
  for (const seed of [9, 10]) {
    const t = testBatch(seed);
    assertClose(computeAdvantage("rloo", t).advantages, rlooLoop(t, "score"), 1e-9);
  }
});

Deno.test("rloo_vectorized equals its loop and rloo, except a group of one (0 vs score)", () => {
  for (const seed of [9, 10]) {
    const t = testBatch(seed);
    const vec = computeAdvantage("rloo_vectorized", t).advantages;
    assertClose(vec, rlooLoop(t, "zero"), 1e-9);
    const plain = computeAdvantage("rloo", t).advantages;
    const single = t.uids.map((u) => t.uids.filter((v) => v === u).length === 1);
    for (let i = 0; i < vec.length; i++) {
      if (!single[Math.floor(i / t.R)]) assertClose(vec[i], plain[i], 1e-9, `token ${i}`);
    }
    const t2 = testBatch(seed, { sizes: [2, 3, 4, 2, 2] }); // no group of one: identical
    assertClose(computeAdvantage("rloo_vectorized", t2).advantages, rlooLoop(t2, "score"), 1e-9);
  }
});

/** opo: baseline Σ len·s / Σ len over the group (0 for a group of one). */
function opoLoop(t: TestBatch): number[] {
  const s = rowScores(t);
  const lens = t.uids.map((_, b) => maskRow(t, b).reduce((a, m) => a + m, 0));
  return broadcast(
    t,
    s.map((x, b) => {
      const idx = t.uids.flatMap((v, i) => (v === t.uids[b] ? [i] : []));
      if (idx.length === 1) return x;
      const den = idx.reduce((a, i) => a + lens[i], 0);
      return den === 0 ? x : x - idx.reduce((a, i) => a + lens[i] * s[i], 0) / den;
    }),
  );
}

Deno.test("opo equals its loop (row 2 has length 0 and weighs nothing)", () => {
  for (const seed of [11, 12]) {
    const t = testBatch(seed);
    assertClose(computeAdvantage("opo", t).advantages, opoLoop(t), 1e-9);
  }
});

Deno.test("gpg equals its loop: α = B / #nonzero scores over the whole batch", () => {
  for (const seed of [13, 14]) {
    const t = testBatch(seed);
    const s = rowScores(t), groups = byUid(t, s);
    const alpha = t.B / Math.max(1, s.filter((x) => x !== 0).length);
    const loop = broadcast(
      t,
      s.map((x, b) => {
        const g = groups.get(t.uids[b])!;
        return alpha * (x - (g.length === 1 ? 0 : mean(g)));
      }),
    );
    assertClose(computeAdvantage("gpg", t).advantages, loop, 1e-9);
  }
});

Deno.test("reinforce_plus_plus_baseline equals its loop: centred, tiled, whitened, masked", () => {
  for (const seed of [15, 16]) {
    const t = testBatch(seed);
    const s = rowScores(t), groups = byUid(t, s);
    const centred = s.map((x, b) => {
      const g = groups.get(t.uids[b])!;
      return x - (g.length === 1 ? 0 : mean(g));
    });
    const tiled = broadcast(t, centred),
      m: number[] = Array.from(t.responseMask, (v) => (v ? 1 : 0));
    // verl's masked_mean divides by (count + 1e-8); masked_var is its Bessel-corrected form
    const n = m.reduce((a, v) => a + v, 0);
    const mu = tiled.reduce((a, x, i) => a + x * m[i], 0) / (n + 1e-8);
    const v = tiled.reduce((a, x, i) => a + (x - mu) ** 2 * m[i], 0) / (n + 1e-8) * n / (n - 1);
    const loop = tiled.map((x, i) => (x - mu) / Math.sqrt(v + 1e-8) * m[i]);
    const out = computeAdvantage("reinforce_plus_plus_baseline", t);
    assertClose(out.advantages, loop, 1e-7);
    assertFinite(out.advantages);
  }
});
