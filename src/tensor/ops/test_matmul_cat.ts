/** The fixture the K-joined product's tests share (matmul_cat_test.ts, matmul_vec_test.ts). */
import { randomArray } from "../../testing/mod.ts";
import { Tensor } from "../tensor.ts";

/** Operands of one product [m, k] x [k, n] stored as the flags say, arrays and tensors. */
export function product(
  m: number,
  n: number,
  k: number,
  transA: boolean,
  transB: boolean,
  seed: number,
) {
  const a = randomArray(m * k, seed), b = randomArray(k * n, seed + 1);
  return {
    arrays: { a, b, k, transA, transB },
    tensors: {
      a: Tensor.from(a, transA ? [k, m] : [m, k]),
      b: Tensor.from(b, transB ? [n, k] : [k, n]),
      transA,
      transB,
    },
  };
}
