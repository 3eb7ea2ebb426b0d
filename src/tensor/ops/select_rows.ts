import { gpu, packParams } from "../../gpu/mod.ts";
import { isGradEnabled, record, registerOp } from "../autograd.ts";
import { DTYPE_BYTES, fmtShape, Tensor } from "../tensor.ts";
import { grid1d } from "./grid.ts";

const WG = 256;

registerOp(
  "select_rows",
  "x [N, ...R] (32-bit), index i32 [M] -> x[index[m]] [M, ...R], zeros where index < 0; the " +
    "gradient is the same gather with the inverse index (index injective)",
);

export interface SelectRowsOptions {
  /**
   * i32 [N]: for each row of x, the output row that reads it, or -1. Needed for the gradient
   * (which is then a gather too): the index must be injective and this its inverse.
   */
  inverse?: Tensor;
}

function check(x: Tensor, index: Tensor, inverse: Tensor | undefined): void {
  const desc = () =>
    `x ${fmtShape(x.shape)} ${x.dtype}, index ${fmtShape(index.shape)} ${index.dtype}` +
    (inverse ? `, inverse ${fmtShape(inverse.shape)} ${inverse.dtype}` : "");
  if (x.rank < 1 || DTYPE_BYTES[x.dtype] !== 4) {
    throw new Error(`selectRows: x must be [N, ...] of a 32-bit dtype, got ${desc()}`);
  }
  if (index.dtype !== "i32" || index.rank !== 1) {
    throw new Error(`selectRows: index must be i32 [M], got ${desc()}`);
  }
  if (inverse && (inverse.dtype !== "i32" || inverse.rank !== 1 || inverse.size !== x.shape[0])) {
    throw new Error(`selectRows: inverse must be i32 [N] for x [N, ...], got ${desc()}`);
  }
}

/**
 * Gathers rows of x [N, ...R] by index i32 [M] into [M, ...R]; a negative index gives a row of
 * zeros. With `inverse`, the gradient w.r.t. x is the gather of the output gradient by `inverse`
 * (rows no index points at get zero). This packs a padded batch's real tokens and unpacks them.
 */
export function selectRows(x: Tensor, index: Tensor, options: SelectRowsOptions = {}): Tensor {
  const { inverse } = options;
  check(x, index, inverse);
  if (!inverse && x.requiresGrad && isGradEnabled()) {
    throw new Error(`selectRows: x ${fmtShape(x.shape)} takes a gradient, which needs the inverse`);
  }
  const N = x.shape[0], M = index.size, C = N === 0 ? 0 : x.size / N;
  const out = Tensor.empty([M, ...x.shape.slice(1)], x.dtype, "select_rows");
  if (M * C > 0) {
    gpu().dispatch({ shader: "select_rows", entry: "gather", defines: { WG } }, {
      params: packParams([M, C, N]),
      buffers: [index.buffer, x.buffer, out.buffer],
      workgroups: grid1d(M * C, WG),
    });
  }
  return record("select_rows", [x], out, (g) => [selectRows(g, inverse!, { inverse: index })]);
}
