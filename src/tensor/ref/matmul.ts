/**
 * CPU reference for the matmul family: plain loops over Float32Array with f64 accumulation, used
 * by the tests to check the GPU kernels.
 */
import { roundToF16 } from "../half.ts";

/** Sizes of a batched product C[b] = op(A[b]) @ op(B[b]), op(A) [M, K], op(B) [K, N]. */
export interface MatmulDims {
  batch: number;
  m: number;
  n: number;
  k: number;
  transA?: boolean; // A stored [K, M]
  transB?: boolean; // B stored [N, K]
  /** One A (or B) shared by every batch entry instead of one per entry. */
  sharedA?: boolean;
  sharedB?: boolean;
}

/** C [batch, M, N] = op(A) @ op(B). */
export function matmul(a: ArrayLike<number>, b: ArrayLike<number>, d: MatmulDims): Float32Array {
  const { batch, m, n, k } = d;
  const c = new Float32Array(batch * m * n);
  for (let bi = 0; bi < batch; bi++) {
    const ao = d.sharedA ? 0 : bi * m * k;
    const bo = d.sharedB ? 0 : bi * k * n;
    const co = bi * m * n;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let p = 0; p < k; p++) {
          const av = d.transA ? a[ao + p * m + i] : a[ao + i * k + p]; // [K, M] or [M, K]
          const bv = d.transB ? b[bo + j * k + p] : b[bo + p * n + j]; // [N, K] or [K, N]
          s += av * bv;
        }
        c[co + i * n + j] = s;
      }
    }
  }
  return c;
}

/** Gradients of sum(C * g) for the inputs of `matmul`, in their stored layouts. */
export function matmulBackward(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  g: ArrayLike<number>, // [batch, M, N]
  d: MatmulDims,
): { da: Float32Array; db: Float32Array } {
  const { batch, m, n, k } = d;
  const da = new Float64Array(d.sharedA ? m * k : batch * m * k);
  const db = new Float64Array(d.sharedB ? k * n : batch * k * n);
  for (let bi = 0; bi < batch; bi++) {
    const ao = d.sharedA ? 0 : bi * m * k;
    const bo = d.sharedB ? 0 : bi * k * n;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        const gv = g[bi * m * n + i * n + j];
        for (let p = 0; p < k; p++) {
          const ai = ao + (d.transA ? p * m + i : i * k + p);
          const bj = bo + (d.transB ? j * k + p : p * n + j);
          da[ai] += gv * b[bj];
          db[bj] += gv * a[ai];
        }
      }
    }
  }
  return { da: Float32Array.from(da), db: Float32Array.from(db) };
}

/** out [R, N] = x [R, K] @ w^T + bias (+ residual [R, N]), w [N, K] (Hugging Face layout). */
export function linear(
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  bias: ArrayLike<number> | null,
  rows: number,
  inF: number,
  outF: number,
  residual: ArrayLike<number> | null = null,
): Float32Array {
  const out = matmul(x, w, { batch: 1, m: rows, n: outF, k: inF, transB: true });
  if (bias) {
    for (let i = 0; i < rows; i++) for (let j = 0; j < outF; j++) out[i * outF + j] += bias[j];
  }
  if (residual) { for (let i = 0; i < out.length; i++) out[i] += residual[i]; }
  return out;
}

/** Column sums of a row-major [R, N] matrix. */
export function colsum(x: ArrayLike<number>, rows: number, cols: number): Float32Array {
  const out = new Float64Array(cols);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[j] += x[i * cols + j];
  return Float32Array.from(out);
}

/** Every value rounded to f16 (what a cast to f16 stores), as f32. */
export function roundedF16(x: ArrayLike<number>): Float32Array {
  return Float32Array.from(x, roundToF16);
}

/**
 * The mixed-precision linear (`linear` with `half`): forward and gradients from f16-rounded
 * operands (x, w and the output gradient g), products accumulated in f64 here, results in f32.
 * x [R, K], w [N, K], g [R, N] -> y [R, N], dx [R, K], dw [N, K], db [N] (from the f32 g).
 */
export function linearF16(
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  g: ArrayLike<number>,
  d: { rows: number; inF: number; outF: number; bias?: ArrayLike<number> | null },
): { y: Float32Array; dx: Float32Array; dw: Float32Array; db: Float32Array } {
  const x16 = roundedF16(x), w16 = roundedF16(w), g16 = roundedF16(g);
  const { rows, inF, outF } = d;
  const y = linear(x16, w16, d.bias ?? null, rows, inF, outF);
  const dx = matmul(g16, w16, { batch: 1, m: rows, n: inF, k: outF });
  const dw = matmul(g16, x16, { batch: 1, m: outF, n: inF, k: rows, transA: true });
  return { y, dx, dw, db: colsum(g, rows, outF) };
}

/** One product of `matmulCat`: A [M, K] (or [K, M]), B [K, N] (or [N, K]). */
export interface CatRefProduct {
  a: ArrayLike<number>;
  b: ArrayLike<number>;
  k: number;
  transA?: boolean;
  transB?: boolean;
}

/**
 * C [M, N] = op(A) @ op(B) + scale op(A2) @ op(B2) (+ bias [N]) (+ residual [M, N]): the two
 * products joined along K (shaders/matmul_cat.wgsl).
 */
export function matmulCat(
  first: CatRefProduct,
  second: CatRefProduct,
  d: {
    m: number;
    n: number;
    scale?: number;
    bias?: ArrayLike<number>;
    residual?: ArrayLike<number>;
  },
): Float32Array {
  const { m, n } = d;
  const dims = (p: CatRefProduct) => ({ batch: 1, m, n, ...p });
  const c1 = matmul(first.a, first.b, dims(first)), c2 = matmul(second.a, second.b, dims(second));
  const scale = d.scale ?? 1;
  return c1.map((v, i) => v + scale * c2[i] + (d.bias?.[i % n] ?? 0) + (d.residual?.[i] ?? 0));
}
