/**
 * The token-level estimators (gae, reinforce_plus_plus, remax and the optimal token baselines)
 * against plain loops written here from verl's formulas: explicit sums over positions rather
 * than running scans, explicit lists per group.
 */
import { computeAdvantage } from "../mod.ts";
import { assertClose, assertFinite } from "../test_util.ts";
import { maskRow, type TestBatch, testBatch } from "./test_batch.ts";
import { optimalTokenBaseline } from "./optimal_token_baseline.ts";
import { tirOptimalTokenBaseline } from "./tir_optimal_token_baseline.ts";

const at = (t: TestBatch, b: number, k: number) => b * t.R + k;

/** verl's masked_whiten over the whole batch: (x - μ)/sqrt(var + 1e-8), masked mean / (n + 1e-8). */
function whiten(t: TestBatch, x: number[]): number[] {
  const m: number[] = Array.from(t.responseMask, (v) => (v ? 1 : 0));
  const n = m.reduce((a, v) => a + v, 0);
  const mu = x.reduce((a, v, i) => a + v * m[i], 0) / (n + 1e-8);
  const v = x.reduce((a, y, i) => a + (y - mu) ** 2 * m[i], 0) / (n + 1e-8) * n / (n - 1);
  return x.map((y) => (y - mu) / Math.sqrt(v + 1e-8));
}

Deno.test("gae equals verl's column-order loop, then masked whitening", () => {
  const t = testBatch(21), gamma = 0.9, lam = 0.8;
  const adv = new Array(t.B * t.R).fill(0), ret = new Array(t.B * t.R).fill(0);
  for (let b = 0; b < t.B; b++) {
    let nextValue = 0, last = 0;
    for (let k = t.R - 1; k >= 0; k--) {
      const i = at(t, b, k), m = maskRow(t, b)[k];
      const delta = t.tokenLevelRewards[i] + gamma * nextValue - t.values[i];
      const gae = delta + gamma * lam * last;
      nextValue = m ? t.values[i] : nextValue;
      last = m ? gae : last;
      adv[i] = last;
      ret[i] = last + t.values[i];
    }
  }
  const out = computeAdvantage("gae", t, { gamma, lam });
  assertClose(out.returns, ret, 1e-9);
  assertClose(out.advantages, whiten(t, adv), 1e-7);
});

Deno.test("reinforce_plus_plus equals its loop: G_t sums γ^{j-t} r_j until the next masked token", () => {
  const t = testBatch(22), gamma = 0.7;
  const G = new Array(t.B * t.R).fill(0);
  for (let b = 0; b < t.B; b++) {
    const m = maskRow(t, b);
    for (let k = 0; k < t.R; k++) {
      // G_t = r_t + γ·m_{t+1}·G_{t+1}: the sum runs on while the next positions are valid
      let s = t.tokenLevelRewards[at(t, b, k)];
      for (let j = k + 1; j < t.R && m[j] !== 0; j++) {
        s += gamma ** (j - k) * t.tokenLevelRewards[at(t, b, j)];
      }
      G[at(t, b, k)] = s;
    }
  }
  const out = computeAdvantage("reinforce_plus_plus", t, { gamma });
  assertClose(out.returns, G, 1e-9);
  const mask: number[] = Array.from(t.responseMask, (v) => (v ? 1 : 0));
  assertClose(out.advantages, whiten(t, G).map((a, i) => a * mask[i]), 1e-7);
});

Deno.test("remax equals its loop: masked reward-to-go minus the greedy reward on valid tokens", () => {
  const t = testBatch(23);
  const G: number[] = [], A: number[] = [];
  for (let b = 0; b < t.B; b++) {
    const m = maskRow(t, b);
    for (let k = 0; k < t.R; k++) {
      let s = 0;
      for (let j = k; j < t.R; j++) s += t.tokenLevelRewards[at(t, b, j)] * m[j];
      G.push(s);
      A.push(s - t.rewardBaselines[b] * m[k]);
    }
  }
  const out = computeAdvantage("remax", t);
  assertClose(out.returns, G, 1e-12);
  assertClose(out.advantages, A, 1e-12);
});

/** Σ_{k≥t} r·m and W_t = Σ_{j≤t} (1 - 2π + Σπ²)·ρ²·m, as explicit sums. */
function returnsAndWeights(t: TestBatch, withIs: boolean) {
  const G: number[] = [], W: number[] = [];
  for (let b = 0; b < t.B; b++) {
    const m = maskRow(t, b);
    for (let k = 0; k < t.R; k++) {
      let g = 0, w = 0;
      for (let j = k; j < t.R; j++) g += t.tokenLevelRewards[at(t, b, j)] * m[j];
      for (let j = 0; j <= k; j++) {
        const i = at(t, b, j), rho = withIs ? t.rolloutIsWeights[i] : 1;
        w += (1 - 2 * Math.exp(t.oldLogProbs[i]) + t.sumPiSquared[i]) * rho * rho * m[j];
      }
      G.push(g);
      W.push(w);
    }
  }
  return { G, W };
}

function groupsOf(t: TestBatch, keep: (b: number) => boolean): number[][] {
  const m = new Map<string, number[]>();
  t.uids.forEach((u, b) => keep(b) && m.set(u, [...(m.get(u) ?? []), b]));
  return [...m.values()];
}

const lengthOf = (t: TestBatch, b: number) => maskRow(t, b).reduce((a, v) => a + v, 0);

/** The row to zero the tail of: the only row of maximum length, longer than every other. */
function tailRow(t: TestBatch, rows: number[]): [number, number] | null {
  const lens = rows.map((b) => lengthOf(t, b)).sort((x, y) => y - x);
  const top = rows.filter((b) => lengthOf(t, b) === lens[0]);
  return top.length === 1 && lens[0] > lens[1] ? [top[0], lens[1]] : null;
}

function otbLoop(t: TestBatch, o: { withIs: boolean; zeroTail: boolean }) {
  const { G, W } = returnsAndWeights(t, o.withIs);
  const base = new Array(t.B * t.R).fill(0);
  for (const rows of groupsOf(t, () => true)) {
    if (rows.length === 1) continue;
    for (let k = 0; k < t.R; k++) {
      const num = rows.reduce((a, b) => a + G[at(t, b, k)] * W[at(t, b, k)] * maskRow(t, b)[k], 0);
      const den = rows.reduce((a, b) => a + W[at(t, b, k)] * maskRow(t, b)[k], 0) + 1e-8;
      for (const b of rows) base[at(t, b, k)] = num / den;
    }
    const tail = o.zeroTail ? tailRow(t, rows) : null;
    if (tail) { for (let k = tail[1]; k < t.R; k++) base[at(t, tail[0], k)] = 0; }
  }
  const mask: number[] = Array.from(t.responseMask, (v) => (v ? 1 : 0));
  return { G, A: G.map((g, i) => (g - base[i]) * mask[i]) };
}

Deno.test("optimal_token_baseline equals its loop (IS weights on/off, zero tail on/off)", () => {
  for (const seed of [24, 25, 26]) {
    for (const withIs of [false, true]) {
      const t = testBatch(seed, { levels: [0, 0.5, 1, -1] });
      const inp = { ...t, rolloutIsWeights: withIs ? t.rolloutIsWeights : undefined };
      const loop = otbLoop(t, { withIs, zeroTail: false });
      const out = computeAdvantage("optimal_token_baseline", inp);
      assertClose(out.returns, loop.G, 1e-12, `returns seed ${seed}`);
      assertClose(out.advantages, loop.A, 1e-9, `seed ${seed} is ${withIs}`);
      assertFinite(out.advantages);
      const tail = optimalTokenBaseline(inp, { handleZeroTail: true, epsilon: 1e-8 });
      assertClose(tail.advantages, otbLoop(t, { withIs, zeroTail: true }).A, 1e-9, "zero tail");
    }
  }
});

function tirLoop(t: TestBatch, o: { withIs: boolean; zeroTail: boolean }) {
  const { G, W } = returnsAndWeights(t, o.withIs);
  const valid = (b: number) => maskRow(t, b).flatMap((m, k) => (m ? [at(t, b, k)] : [])); // row b's valid positions
  const A = new Array(t.B * t.R).fill(0);
  for (const rows of groupsOf(t, (b) => lengthOf(t, b) > 0)) {
    const base = new Map(rows.map((b) => [b, valid(b).map(() => 0)]));
    if (rows.length > 1) {
      const L = Math.max(...rows.map((b) => lengthOf(t, b)));
      for (let k = 0; k < L; k++) {
        let num = 0, den = 0;
        for (const b of rows) {
          const p = valid(b)[k];
          if (p !== undefined) (num += G[p] * W[p], den += W[p]);
        }
        for (const b of rows) if (k < lengthOf(t, b)) base.get(b)![k] = num / (den + 1e-8);
      }
      const tail = o.zeroTail ? tailRow(t, rows) : null;
      if (tail) base.get(tail[0])!.fill(0, tail[1]);
    }
    for (const b of rows) valid(b).forEach((p, k) => (A[p] = G[p] - base.get(b)![k]));
  }
  return { G, A };
}

Deno.test("tir_optimal_token_baseline equals its loop over k-th valid tokens (tool gap in row 4)", () => {
  for (const seed of [27, 28, 29]) {
    for (const withIs of [false, true]) {
      const t = testBatch(seed, { levels: [0, 0.5, 1, -1] });
      const inp = { ...t, rolloutIsWeights: withIs ? t.rolloutIsWeights : undefined };
      const out = computeAdvantage("tir_optimal_token_baseline", inp);
      const loop = tirLoop(t, { withIs, zeroTail: true });
      assertClose(out.returns, loop.G, 1e-12);
      assertClose(out.advantages, loop.A, 1e-9, `seed ${seed} is ${withIs}`);
      const keep = tirOptimalTokenBaseline(inp, { handleZeroTail: false, epsilon: 1e-8 });
      assertClose(keep.advantages, tirLoop(t, { withIs, zeroTail: false }).A, 1e-9, "no tail");
    }
  }
});

Deno.test("token baselines, hand case: group of one keeps its return; a lone tail", () => {
  // R = 3, π = 0.5 and Σπ² = 0.5 everywhere: w = 1 - 1 + 0.5 = 0.5, W = [0.5, 1, 1.5]
  // group a: row0 len 3 reward 1 at t=2; row1 len 1 reward 0 at t=0. group b: row2 alone, len 2.
  const lp = Math.log(0.5);
  const inp = {
    R: 3,
    tokenLevelRewards: new Float64Array([0, 0, 1, 0, 0, 0, 0, 2, 0]),
    responseMask: new Float32Array([1, 1, 1, 1, 0, 0, 1, 1, 0]),
    uids: ["a", "a", "b"],
    oldLogProbs: new Float64Array(9).fill(lp),
    sumPiSquared: new Float64Array(9).fill(0.5),
  };
  // t=0: B = (1·0.5 + 0·0.5)/(1 + 1e-8) ≈ 0.5 -> row0 A0 = 0.5, row1 A0 = -0.5
  // t=1,2: only row0 valid -> B = G·W/(W + ε) ≈ 1 -> A ≈ 0 (optimal_token_baseline)
  // tir zeroes row0's baseline from k = 1 (the runner-up's length) -> A = G = 1
  const e = 1e-8;
  const otb = computeAdvantage("optimal_token_baseline", inp).advantages;
  assertClose(otb, [
    1 - 0.5 / (1 + e),
    1 - 1 / (1 + e),
    1 - 1.5 / (1.5 + e),
    -0.5 / (1 + e),
    0,
    0,
    2,
    2,
    0,
  ]);
  const tir = computeAdvantage("tir_optimal_token_baseline", inp).advantages;
  assertClose(tir, [1 - 0.5 / (1 + e), 1, 1, -0.5 / (1 + e), 0, 0, 2, 2, 0]);
});
