/**
 * Random estimator inputs for the estimator tests: groups of several sizes (one of one) in
 * shuffled order, right-padded rows of random length, an all-padding row, a row with a masked
 * stretch in the middle (tool output), rewards on masked positions too (outcome scores sum every
 * position, as verl's `.sum(-1)`), and the per-token inputs of the token baselines.
 */
import type { AdvantageInputs } from "../advantage.ts";
import { rng } from "../test_util.ts";

export interface TestBatch extends Required<Omit<AdvantageInputs, "rolloutIsWeights">> {
  B: number;
  rolloutIsWeights: Float64Array; // [B, R]
}

/** `sizes[g]` rows carry uid `g<g>`; rows are shuffled so a group is not contiguous. */
export function testBatch(
  seed: number,
  o: { sizes?: number[]; R?: number; levels?: number[] } = {},
): TestBatch {
  const r = rng(seed);
  const sizes = o.sizes ?? [3, 1, 2, 4, 2, 3];
  const R = o.R ?? 6;
  const levels = o.levels ?? [0, 0.5, 1];
  const uids = sizes.flatMap((n, g) => Array<string>(n).fill(`g${g}`));
  for (let i = uids.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [uids[i], uids[j]] = [uids[j], uids[i]];
  }
  const B = uids.length;
  const responseMask = new Float32Array(B * R);
  for (let b = 0; b < B; b++) {
    const len = b === 2 ? 0 : 1 + Math.floor(r() * R); // row 2: all padding
    responseMask.fill(1, b * R, b * R + len);
  }
  if (B > 4) responseMask.fill(0, 4 * R + 1, 4 * R + 3).fill(1, 4 * R + 3, 5 * R); // tool output
  const pick = () => levels[Math.floor(r() * levels.length)];
  const tokenLevelRewards = new Float64Array(B * R).map(() => (r() < 0.3 ? pick() : 0));
  const oldLogProbs = new Float64Array(B * R).map(() => Math.log(0.05 + 0.95 * r()));
  const sumPiSquared = oldLogProbs.map((lp) => {
    const p = Math.exp(lp);
    return p * p + (1 - p * p) * r() * 0.5;
  });
  return {
    B,
    R,
    uids,
    responseMask,
    tokenLevelRewards,
    values: new Float64Array(B * R).map(() => r() * 2 - 1),
    rewardBaselines: new Float64Array(B).map(() => r()),
    oldLogProbs,
    sumPiSquared,
    rolloutIsWeights: new Float64Array(B * R).map(() => 0.5 + r()),
  };
}

/** Row b's valid-mask entries as 0/1 numbers. */
export function maskRow(t: TestBatch, b: number): number[] {
  return Array.from(t.responseMask.subarray(b * t.R, b * t.R + t.R), (m) => (m !== 0 ? 1 : 0));
}
