/**
 * Two products joined along K in one tiled GEMM (shaders/matmul_cat.wgsl):
 * C [M, N] = op(A) @ op(B) + scale op(A2) @ op(B2) (+ bias) (+ residual), that is
 * [op(A) | op(A2)] @ [op(B) ; scale op(B2)], with the tile choice, split-K and epilogues of the
 * plain GEMM. For a low-rank update beside a full product (a LoRA layer: y = x W^T + s (x A^T)
 * B^T and dx = g W + gl A) it saves the second product's [M, N] output and the add. No
 * backward: callers record their own (the LoRA layer's).
 */
import { isGradEnabled } from "../autograd.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { gemm, type TileConfig, type TileName } from "./matmul_kernel.ts";

/** One product's operands: A stored [M, K] (or [K, M] with transA), B [K, N] (or [N, K]). */
export interface CatProduct {
  a: Tensor;
  b: Tensor;
  transA?: boolean;
  transB?: boolean;
}

export interface MatmulCatOptions {
  /** Factor on the second product (default 1). */
  scale?: number;
  /** [N], f32 or f16, added first in the epilogue. */
  bias?: Tensor | null;
  /** f32 [M, N], added last (never the output itself). */
  residual?: Tensor | null;
  /** Tests and benchmarks: a forced tile and K split count. */
  tile?: TileName | TileConfig;
  splits?: number;
}

/** Rows, depth and columns of one product, checked. */
function dims(p: CatProduct, which: string): { m: number; k: number; n: number } {
  for (const [name, t] of [["A", p.a], ["B", p.b]] as const) {
    if (t.rank !== 2 || (t.dtype !== "f32" && t.dtype !== "f16")) {
      throw new Error(
        `matmulCat: ${which} ${name} ${fmtShape(t.shape)} ${t.dtype} must be 2-D f32/f16`,
      );
    }
  }
  const [m, ka] = p.transA ? [p.a.shape[1], p.a.shape[0]] : p.a.shape;
  const [kb, n] = p.transB ? [p.b.shape[1], p.b.shape[0]] : p.b.shape;
  if (ka !== kb) {
    throw new Error(
      `matmulCat: ${which} product's inner dimensions differ: A ${fmtShape(p.a.shape)} ` +
        `(transA=${!!p.transA}) has K=${ka}, B ${fmtShape(p.b.shape)} (transB=${!!p
          .transB}) K=${kb}`,
    );
  }
  return { m, k: ka, n };
}

/** C [M, N] = op(A) @ op(B) + scale op(A2) @ op(B2) (+ bias) (+ residual), f32. */
export function matmulCat(
  first: CatProduct,
  second: CatProduct,
  options: MatmulCatOptions = {},
): Tensor {
  const ops = [first.a, first.b, second.a, second.b];
  if (isGradEnabled() && ops.some((t) => t.requiresGrad)) {
    throw new Error("matmulCat records no backward: call it under noGrad (or in a backward)");
  }
  const d1 = dims(first, "first"), d2 = dims(second, "second");
  if (d1.m !== d2.m || d1.n !== d2.n) {
    throw new Error(
      `matmulCat: the products' outputs differ: [${d1.m}, ${d1.n}] and [${d2.m}, ${d2.n}]`,
    );
  }
  const bias = options.bias ?? null;
  if (bias && (bias.rank !== 1 || bias.shape[0] !== d1.n)) {
    throw new Error(`matmulCat: bias ${fmtShape(bias.shape)} must be [${d1.n}]`);
  }
  const out = Tensor.empty([d1.m, d1.n], "f32", "matmul");
  gemm(first.a, first.b, out, {
    batch: 1,
    m: d1.m,
    n: d1.n,
    k: d1.k,
    transA: !!first.transA,
    transB: !!first.transB,
    strideA: 0,
    strideB: 0,
  }, {
    bias: options.bias,
    residual: options.residual,
    tile: options.tile,
    splits: options.splits,
    cat: {
      a: second.a,
      b: second.b,
      k: d2.k,
      transA: !!second.transA,
      transB: !!second.transB,
      scale: options.scale ?? 1,
    },
  });
  return out;
}
