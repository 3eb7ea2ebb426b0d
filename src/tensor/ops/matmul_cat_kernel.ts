/**
 * The dispatch pieces of a K-joined product (shaders/matmul_cat.wgsl) that `gemm` adds to the
 * tiled GEMM's: the second product's description, its defines and its bindings.
 */
import type { Tensor } from "../tensor.ts";

/**
 * The second product of C = op(A) @ op(B) + scale op(A2) @ op(B2): A2 stored [M, K2] (or
 * [K2, M] with transA), B2 [K2, N] (or [N, K2] with transB); K2 may be any size.
 */
export interface GemmCat {
  a: Tensor;
  b: Tensor;
  k: number;
  transA: boolean;
  transB: boolean;
  /** Factor on op(B2), applied as it is loaded. */
  scale: number;
}

/** The #const and alias values of the second product. */
export function catDefines(cat: GemmCat): Record<string, string | boolean> {
  return { TRANS_A2: cat.transA, TRANS_B2: cat.transB, A2_T: cat.a.dtype, B2_T: cat.b.dtype };
}

/** The bindings of a K-joined product: the epilogue's five, then A2 at 6 and B2 at 7. */
export function catBuffers(base: (GPUBuffer | null)[], cat: GemmCat | null): (GPUBuffer | null)[] {
  if (!cat) return base;
  const out = [...base];
  while (out.length < 5) out.push(null);
  return [...out, cat.a.buffer, cat.b.buffer];
}
