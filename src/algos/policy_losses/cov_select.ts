/**
 * The tokens clip_cov and kl_cov treat apart (Cui et al. 2025, arXiv:2505.22617), chosen over all
 * valid tokens of one call (one micro-batch, as verl's dp_actor passes them):
 *
 *   cov_t = (A_t - mean A)·(sg(logp_t) - mean sg(logp)),  means over the N valid tokens
 *
 * - kl_cov: the k = max(1, floor(kl_cov_ratio·N)) tokens of largest cov (none when N = 0).
 *   torch.topk leaves the order of equal values open; here ties go to the lower row-major index.
 * - clip_cov: candidates are valid tokens the PPO clip has not already clipped (L2 ≤ L1) with
 *   clip_cov_lb < cov < clip_cov_ub; k = min(max(floor(clip_cov_ratio·N), 1), #candidates) of
 *   them are chosen at random. verl draws torch.randperm from torch's global generator; here the
 *   chosen candidates are those with the largest key mixSeed(seed, j), j the token's row-major
 *   ordinal among the valid tokens (ties to the lower index): a uniformly random subset of the
 *   same size, fixed by the seed and the data, and the same on the GPU
 *   (shaders/ppo_loss_cov.wgsl), which ranks f32 covariances where this ranks f64 ones.
 *
 * Row-major ordinals of valid tokens do not change when padding columns are added, so the
 * trainer's `[n, P + R]` layout chooses the same tokens as `[n, R]`.
 *
 * @module
 */
import { type Mask, rowsOf, type Vec } from "../masked.ts";
import { mixSeed } from "../../tensor/mod.ts";

/** cov_t of every valid token, `[B, R]` (0 on invalid tokens). */
export function tokenCovariance(advantages: Vec, logProb: Vec, mask: Mask): Float64Array {
  let n = 0, sa = 0, sl = 0;
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] !== 0) (n++, sa += advantages[i], sl += logProb[i]);
  }
  const ma = sa / Math.max(n, 1), ml = sl / Math.max(n, 1);
  const cov = new Float64Array(mask.length);
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] !== 0) cov[i] = (advantages[i] - ma) * (logProb[i] - ml);
  }
  return cov;
}

/**
 * 0/1 flags of the `k` eligible tokens with the largest keys, ties to the lower index (all of
 * them when fewer than k are eligible).
 */
export function largestK(
  keys: ArrayLike<number>,
  eligible: ArrayLike<number>,
  k: number,
): Uint8Array {
  const idx: number[] = [];
  for (let i = 0; i < keys.length; i++) if (eligible[i]) idx.push(i);
  idx.sort((a, b) => (keys[b] - keys[a]) || (a - b));
  const flags = new Uint8Array(keys.length);
  for (const i of idx.slice(0, Math.max(k, 0))) flags[i] = 1;
  return flags;
}

function validCount(mask: Mask): number {
  let n = 0;
  for (let i = 0; i < mask.length; i++) if (mask[i] !== 0) n++;
  return n;
}

/** How many tokens kl_cov takes from N valid ones: verl's max(1, int(N·ratio)), 0 when N = 0. */
export function klCovCount(ratio: number, n: number): number {
  if (!(ratio > 0 && ratio <= 1)) throw new Error(`kl_cov_ratio must be in (0, 1], got ${ratio}`);
  return n === 0 ? 0 : Math.max(1, Math.floor(n * ratio));
}

/** How many candidates clip_cov cuts at most: verl's max(int(ratio·N), 1). */
export function clipCovCount(ratio: number, n: number): number {
  if (!(ratio > 0)) throw new Error(`clip_cov_ratio must be > 0, got ${ratio}`);
  return Math.max(Math.floor(ratio * n), 1);
}

/** kl_cov's chosen tokens, `[B, R]` 0/1. */
export function klCovSelection(
  inp: { advantages: Vec; logProb: Vec; responseMask: Mask },
  ratio: number,
): Uint8Array {
  const { advantages, logProb, responseMask: mask } = inp;
  const cov = tokenCovariance(advantages, logProb, mask);
  return largestK(cov, mask, klCovCount(ratio, validCount(mask)));
}

/** What clip_cov's choice depends on besides the data. */
export interface ClipCovChoice {
  ratio: number;
  lb: number;
  ub: number;
  /** 1 where the PPO clip already clipped the token (L2 > L1) */
  clipped: ArrayLike<number>;
  seed: number;
}

/** clip_cov's chosen tokens, `[B, R]` 0/1. */
export function clipCovSelection(
  inp: { R: number; advantages: Vec; logProb: Vec; responseMask: Mask },
  c: ClipCovChoice,
): Uint8Array {
  const { advantages, logProb, responseMask: mask } = inp;
  rowsOf(mask.length, inp.R);
  const cov = tokenCovariance(advantages, logProb, mask);
  const keys = new Float64Array(mask.length), eligible = new Uint8Array(mask.length);
  let ordinal = 0;
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] === 0) continue;
    keys[i] = mixSeed(c.seed >>> 0, ordinal++);
    eligible[i] = !c.clipped[i] && cov[i] > c.lb && cov[i] < c.ub ? 1 : 0;
  }
  return largestK(keys, eligible, clipCovCount(c.ratio, ordinal));
}
