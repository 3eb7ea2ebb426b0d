import assert from "node:assert/strict";
import {
  clipCovCount,
  clipCovSelection,
  klCovCount,
  klCovSelection,
  largestK,
  tokenCovariance,
} from "./cov_select.ts";
import { assertClose } from "../test_util.ts";

Deno.test("tokenCovariance: (A - mean A)(logp - mean logp) over valid tokens, by hand", () => {
  // valid: A = [1, 3, 2], logp = [-1, -3, -5] -> means 2, -3
  const cov = tokenCovariance(
    new Float64Array([1, 3, 99, 2]),
    new Float64Array([-1, -3, 99, -5]),
    new Float32Array([1, 1, 0, 1]),
  );
  assertClose(cov, [(1 - 2) * (-1 + 3), (3 - 2) * 0, 0, 0 * -2], 1e-12);
});

Deno.test("largestK: largest keys first, ties to the lower index, eligible only", () => {
  const keys = [5, 7, 7, 1, 7, 9];
  assert.deepEqual([...largestK(keys, [1, 1, 1, 1, 1, 0], 2)], [0, 1, 1, 0, 0, 0]);
  assert.deepEqual([...largestK(keys, [1, 0, 1, 1, 1, 1], 3)], [0, 0, 1, 0, 1, 1]);
  assert.deepEqual([...largestK(keys, [0, 0, 0, 1, 0, 0], 4)], [0, 0, 0, 1, 0, 0]);
  assert.deepEqual([...largestK(keys, [1, 1, 1, 1, 1, 1], 0)], [0, 0, 0, 0, 0, 0]);
});

Deno.test("selection sizes follow verl's int(ratio·N) rules", () => {
  assert.equal(klCovCount(0.0002, 5000), 1);
  assert.equal(klCovCount(0.0002, 10000), 2);
  assert.equal(klCovCount(0.0002, 3), 1);
  assert.equal(klCovCount(0.0002, 0), 0);
  assert.equal(klCovCount(1, 7), 7);
  assert.throws(() => klCovCount(1.5, 7), /kl_cov_ratio must be in \(0, 1\]/);
  assert.equal(clipCovCount(0.0002, 10), 1);
  assert.equal(clipCovCount(0.25, 10), 2);
  assert.throws(() => clipCovCount(0, 10), /clip_cov_ratio must be > 0/);
});

/** 12 valid tokens in 3 rows of 5 (+ padding); covariances spread around 0. */
function batch(cols = 5, offset = 0) {
  const A = [1, 1, 1, 1, -1, -1, -1, -1, 0.5, 0.5, 0.5, 0.5];
  const lp = [-1, -2, -0.5, -3, -1.5, -0.2, -2.5, -1.1, -0.7, -2.2, -1.8, -0.9];
  const n = 3 * cols, adv = new Float64Array(n), logp = new Float64Array(n);
  const mask = new Float32Array(n);
  A.forEach((a, j) => {
    const i = Math.floor(j / 4) * cols + offset + (j % 4);
    (adv[i] = a, logp[i] = lp[j], mask[i] = 1);
  });
  return { R: cols, advantages: adv, logProb: logp, responseMask: mask };
}

const chosenOrdinals = (flags: Uint8Array, mask: Float32Array) => {
  const out: number[] = [];
  let j = 0;
  flags.forEach((f, i) => mask[i] && (f && out.push(j), j++));
  return out;
};

Deno.test("kl_cov selection: the k largest covariances, the same under extra padding columns", () => {
  const b = batch();
  const cov = tokenCovariance(b.advantages, b.logProb, b.responseMask);
  const flags = klCovSelection(b, 0.25); // k = 3
  const ranked = [...cov.keys()].filter((i) => b.responseMask[i]).sort((x, y) => cov[y] - cov[x]);
  assert.deepEqual(
    [...flags.keys()].filter((i) => flags[i]),
    ranked.slice(0, 3).sort((x, y) => x - y),
  );
  const wide = batch(9, 3); // the trainer's [n, P + R] layout: prompt columns masked
  assert.deepEqual(
    chosenOrdinals(klCovSelection(wide, 0.25), wide.responseMask),
    chosenOrdinals(flags, b.responseMask),
  );
});

Deno.test("clip_cov selection: a seeded random subset of the candidates only", () => {
  const b = batch();
  const cov = tokenCovariance(b.advantages, b.logProb, b.responseMask);
  const clipped = new Uint8Array(b.responseMask.length);
  clipped[1] = 1;
  const choice = { ratio: 0.25, lb: -0.3, ub: 0.6, clipped, seed: 11 };
  const candidates = [...cov.keys()].filter((i) =>
    b.responseMask[i] && !clipped[i] && cov[i] > -0.3 && cov[i] < 0.6
  );
  assert.ok(candidates.length >= 6, `enough candidates (${candidates.length})`);
  const picks = new Map<number, number>();
  for (let seed = 0; seed < 3000; seed++) {
    const f = clipCovSelection(b, { ...choice, seed });
    const chosen = [...f.keys()].filter((i) => f[i]);
    assert.equal(chosen.length, 3); // min(max(floor(0.25·12), 1), #candidates)
    for (const i of chosen) {
      assert.ok(candidates.includes(i), `token ${i} is a candidate`);
      picks.set(i, (picks.get(i) ?? 0) + 1);
    }
  }
  // every candidate is chosen about k / #candidates of the time
  for (const i of candidates) {
    const p = (picks.get(i) ?? 0) / 3000, want = 3 / candidates.length;
    assert.ok(Math.abs(p - want) < 0.04, `candidate ${i}: ${p} vs ${want}`);
  }
  const a = clipCovSelection(b, choice), again = clipCovSelection(b, choice);
  assert.deepEqual(a, again);
  const wide = batch(9, 3);
  const wideClipped = new Uint8Array(27);
  wideClipped[4] = 1; // the same token as clipped[1]
  assert.deepEqual(
    chosenOrdinals(clipCovSelection(wide, { ...choice, clipped: wideClipped }), wide.responseMask),
    chosenOrdinals(a, b.responseMask),
  );
  // fewer candidates than the quota: all of them
  const few = clipCovSelection(b, { ...choice, ratio: 1, lb: 0.2 });
  const fewCandidates = candidates.filter((i) => cov[i] > 0.2);
  assert.deepEqual([...few.keys()].filter((i) => few[i]), fewCandidates);
});
