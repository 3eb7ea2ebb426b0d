/**
 * GAE advantages and returns on the GPU (shaders/gae.wgsl), the `gaeScan` of src/algos: a reverse
 * scan per sequence, one invocation per row. No backward: advantages and returns are constants of
 * the policy and value updates, so nothing is recorded on the tape.
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { registerOp } from "../../tensor/mod.ts";
import { fmtShape, Tensor } from "../../tensor/mod.ts";
import { grid1d } from "../../tensor/mod.ts";

const WG = 64; // rows per workgroup, passed to shaders/gae.wgsl as #const WG
const MASK_TYPES = { f32: "f32", i32: "i32", u32: "u32" } as const;

registerOp(
  "gae",
  "rewards, values f32 [B, R], response mask (f32/i32/u32) [B, R] -> un-whitened GAE advantages " +
    "and returns [B, R]; masked positions carry the running value and advantage; no backward",
);

export interface GaeOptions {
  /** Discount (algorithm.gamma). [1] */
  gamma?: number;
  /** GAE lambda (algorithm.lam). [1] */
  lam?: number;
}

/** Both [B, R] f32. */
export interface GaeResult {
  advantages: Tensor;
  returns: Tensor;
}

function check(rewards: Tensor, values: Tensor, mask: Tensor): void {
  const desc = `rewards ${fmtShape(rewards.shape)} ${rewards.dtype}, values ` +
    `${fmtShape(values.shape)} ${values.dtype}, mask ${fmtShape(mask.shape)} ${mask.dtype}`;
  if (rewards.dtype !== "f32" || values.dtype !== "f32" || !(mask.dtype in MASK_TYPES)) {
    throw new Error(`gae: expected f32 rewards and values and an f32/i32/u32 mask, got ${desc}`);
  }
  const same = (t: Tensor) =>
    t.rank === 2 && t.shape[0] === rewards.shape[0] && t.shape[1] === rewards.shape[1];
  if (rewards.rank !== 2 || !same(values) || !same(mask)) {
    throw new Error(`gae: expected rewards, values and mask of one shape [B, R], got ${desc}`);
  }
}

/** rewards [B, R], values [B, R], responseMask [B, R] -> advantages and returns [B, R]. */
export function gae(
  rewards: Tensor,
  values: Tensor,
  responseMask: Tensor,
  options: GaeOptions = {},
): GaeResult {
  check(rewards, values, responseMask);
  const [B, R] = rewards.shape;
  const advantages = Tensor.empty([B, R], "f32", "advantages");
  const returns = Tensor.empty([B, R], "f32", "returns");
  if (B * R > 0) {
    const maskType = MASK_TYPES[responseMask.dtype as keyof typeof MASK_TYPES];
    gpu().dispatch({ shader: "gae", defines: { MaskT: maskType, WG } }, {
      params: packParams([B, R, { f32: options.gamma ?? 1 }, { f32: options.lam ?? 1 }]),
      buffers: [
        rewards.buffer,
        values.buffer,
        responseMask.buffer,
        advantages.buffer,
        returns.buffer,
      ],
      workgroups: grid1d(B, WG),
    });
  }
  return { advantages, returns };
}
