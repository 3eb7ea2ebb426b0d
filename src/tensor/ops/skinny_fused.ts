/**
 * What the fused skinny ops (qkv_linear.ts, swiglu_linear.ts) share: the tile config and its
 * check, the operand predicates, the operand checks that open both ops, and the kernel defines.
 * Both run shaders/include/skinny_tile.wgsl's staged tiles with 4 weight rows per thread.
 */
import type { KernelSpec } from "../../gpu/mod.ts";
import { gpu } from "../../gpu/mod.ts";
import { isGradEnabled, isRecomputedLater } from "../grad_mode.ts";
import { fmtShape, type Tensor } from "../tensor.ts";
import {
  skinnyConfig,
  skinnyMaxM,
  skinnyPolicy,
  skinnyStageFits,
  skinnyTargetGroups,
} from "./matmul_skinny.ts";

/** Threads along N (wgX, 4 weight rows each) and M (wgY, tm rows of x each), K per stage. */
export interface FusedSkinnyConfig {
  wgX: number;
  wgY: number;
  tm: number;
  bk: number;
}

/**
 * The tile for M rows: the skinny kernel's thread layout with 4 weight rows per thread. A CPU
 * adapter runs few workgroups at once and compiles large unrolled tiles slowly: a small one.
 */
export function fusedSkinnyConfig(m: number): FusedSkinnyConfig {
  if (gpu().isCpuAdapter) return { wgX: 4, wgY: 4, tm: 1, bk: 16 };
  const c = skinnyConfig(m);
  return { wgX: c.wgX, wgY: c.wgY, tm: c.tm, bk: c.bk };
}

/** Throws `<op>: config ... is invalid` unless `c` fits the device with `weightTiles` W tiles. */
export function checkFusedConfig(
  c: FusedSkinnyConfig,
  options: { op: string; weightTiles: number },
): void {
  const g = gpu();
  const bm = c.wgY * c.tm, bn = c.wgX * 4, nt = c.wgX * c.wgY;
  const shared = 2 * (bm + options.weightTiles * bn) * (c.bk / 4 + 1) * 16;
  const slots = (rows: number) => Math.ceil(rows * c.bk / 4 / nt);
  const ok = skinnyStageFits(c.bk) && (c.tm === 1 || c.tm === 4) && slots(bm) <= 4 &&
    slots(bn) <= 4 && nt <= g.limits.maxComputeInvocationsPerWorkgroup &&
    shared <= g.limits.maxComputeWorkgroupStorageSize;
  if (!ok) throw new Error(`${options.op}: config ${JSON.stringify(c)} is invalid on this device`);
}

/** f32, or f16 where the GPU has shader-f16. */
export const floatLike = (t: Tensor) => t.dtype === "f32" || (t.dtype === "f16" && gpu().hasF16);

/** Whether autograd would record a gradient through any of `ts`. */
export const recorded = (ts: (Tensor | null | undefined)[]) =>
  isGradEnabled() && ts.some((t) => t?.requiresGrad);

/**
 * The conditions both fused ops share: K % 4 == 0 and few rows of x [..., K] (`skinnyMaxM` of
 * the weights `ws` together), float-like operands, no gradient recorded, and not a checkpointed
 * segment's first forward (its recompute, under autograd, could not fuse).
 */
export function fusedOperandsFit(
  x: Tensor,
  ws: readonly Tensor[],
  others: readonly (Tensor | null | undefined)[],
): boolean {
  const k = x.shape[x.rank - 1];
  const ts = [x, ...ws, ...others];
  const weights = ws.reduce((n, w) => n + w.size, 0);
  return k % 4 === 0 && x.size / k <= skinnyMaxM(weights) &&
    ts.every((t) => !t || floatLike(t)) && !recorded(ts) && !isRecomputedLater();
}

/**
 * An error maker `bad(why)` for `op` listing the named operands (nulls left out), after checking
 * that no gradient would be recorded (else `bad(backward)`) and that all are float-like.
 */
export function checkFusedOperands(
  named: readonly (readonly [string, Tensor | null])[],
  options: { op: string; backward: string },
): (why: string) => Error {
  const given = named.filter((e): e is readonly [string, Tensor] => e[1] !== null);
  // Described only when an error is made: this runs for every fused dispatch.
  const desc = () => given.map(([n, t]) => `${n} ${fmtShape(t.shape)} ${t.dtype}`).join(", ");
  const bad = (why: string) => new Error(`${options.op}: ${why}: ${desc()}`);
  const ts = given.map((e) => e[1]);
  if (recorded(ts)) throw bad(options.backward);
  for (const t of ts) {
    if (!floatLike(t)) throw bad("operands must be f32 (or f16 where the GPU has shader-f16)");
  }
  return bad;
}

/** The kernel spec of a fused skinny shader for x, weights of w's dtype and biases of `bias`. */
export function fusedSkinnySpec(
  c: FusedSkinnyConfig,
  options: { shader: string; entry: string; x: Tensor; w: Tensor; bias: Tensor | null },
): KernelSpec {
  const { x, w, bias } = options;
  const vec = (t: Tensor) => `vec4<${t.dtype}>`;
  return {
    shader: options.shader,
    entry: options.entry,
    f16: [x, w, bias].some((t) => t?.dtype === "f16"),
    defines: {
      WG_X: c.wgX,
      WG_Y: c.wgY,
      TM: c.tm,
      BK: c.bk,
      X4: vec(x),
      W4: vec(w),
      BIAS_T: bias?.dtype ?? "f32",
    },
  };
}

/**
 * The K slices of a fused skinny product of `blocks` workgroups: `forced` splits (tests), else with
 * `auto` enough to bring the blocks near the skinny kernel's target while keeping its fewest
 * stages per split (one row of a Qwen2.5-0.5B layer makes 18 blocks of 64 q/k/v columns, each
 * walking all of K unsplit), and one on a CPU adapter (few workgroups run at once there). Slices
 * are whole stages, none empty; `split4` is a slice's length in vec4s.
 */
export function fusedSplitK(
  k: number,
  c: FusedSkinnyConfig,
  options: { blocks: number; auto: boolean; forced?: number },
): { splits: number; split4: number } {
  let wanted = options.forced ?? 1;
  if (options.forced === undefined && options.auto && !gpu().isCpuAdapter) {
    const most = Math.max(1, Math.floor(Math.ceil(k / c.bk) / skinnyPolicy.minStages));
    wanted = Math.max(1, Math.min(Math.ceil(skinnyTargetGroups() / options.blocks), most));
    // Two slices do not pay for the partials' round trip: on an H200 the gate/up product of 64
    // rows (152 blocks) took 0.17 ms more per decode step split in two than unsplit.
    if (wanted < 3) wanted = 1;
  }
  const stage = c.bk / 4;
  const split4 = Math.ceil(Math.ceil(k / 4 / wanted) / stage) * stage;
  return { splits: Math.ceil(k / 4 / split4), split4 };
}
