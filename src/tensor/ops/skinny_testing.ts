/** The fixture the fused skinny ops' tests share (qkv_linear_test.ts, swiglu_linear_test.ts). */
import { roundToF16 } from "../half.ts";
import type { FusedSkinnyConfig } from "./skinny_fused.ts";

export const TOL = { atol: 1e-4, rtol: 1e-4 };

// On the CPU adapter the op's own small tile plus two more shapes of the same code paths: four
// rows of x per thread, and weight tiles whose load slots do not divide evenly among threads.
export const TILES: (FusedSkinnyConfig | undefined)[] = [
  undefined,
  { wgX: 2, wgY: 2, tm: 4, bk: 8 },
  { wgX: 4, wgY: 2, tm: 1, bk: 4 },
];

/** Values rounded through f16 (weights an f16 tensor holds exactly). */
export const round16 = (a: Float32Array) => a.map(roundToF16);
