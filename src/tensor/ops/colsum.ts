/**
 * Column sums of a row-major f32 matrix (shaders/matmul_bias.wgsl): a bias's gradient, RMSNorm's
 * weight gradient, a shared operand's batch of products summed. In a fixed order of adds, so the
 * result does not depend on scheduling (ordered_sum_test.ts).
 */
import { gpu, packParams } from "../../gpu/mod.ts";
import { Tensor } from "../tensor.ts";

const COLS = 32; // columns per workgroup of the column sum
const ROWS = 8; // thread rows striding down the matrix in it
// Few column groups (a k_proj bias: 4) split their rows into chunks of at least CHUNK_ROWS, up to
// about GROUPS workgroups: one H100 took 74 us for a k_proj bias's 6,144 rows walked by 4.
const CHUNK_ROWS = 128;
const GROUPS = 512;

/** Rows per chunk of `colsum`'s first pass (rows itself: one pass). */
export function colsumChunk(rows: number, cols: number): number {
  const want = Math.min(Math.floor(rows / CHUNK_ROWS), Math.ceil(GROUPS / Math.ceil(cols / COLS)));
  return want <= 1 ? rows : Math.ceil(rows / want);
}

/** Sums a row-major [rows, cols] f32 tensor over its rows; the result has shape `outShape`. */
export function colsum(x: Tensor, rows: number, cols: number, outShape: readonly number[]): Tensor {
  const out = Tensor.empty(outShape, "f32", "colsum");
  colsumInto(x, rows, cols, out);
  return out;
}

/** `colsum` into an existing f32 tensor of `cols` elements. */
export function colsumInto(x: Tensor, rows: number, cols: number, out: Tensor): void {
  if (cols === 0) return;
  const chunk = colsumChunk(rows, cols);
  if (chunk >= rows) return colsumPass(x, rows, cols, rows, out);
  const chunks = Math.ceil(rows / chunk);
  const part = Tensor.empty([chunks, cols], "f32", "colsum.part");
  colsumPass(x, rows, cols, chunk, part);
  colsumPass(part, chunks, cols, chunks, out);
  part.dispose();
}

/** out[z, j] = the sum of x's column j over rows [z * chunk, (z + 1) * chunk). */
function colsumPass(x: Tensor, rows: number, cols: number, chunk: number, out: Tensor): void {
  const groups = Math.ceil(cols / COLS);
  const max = gpu().limits.maxComputeWorkgroupsPerDimension;
  const y = Math.ceil(groups / max);
  gpu().dispatch({ shader: "matmul_bias", defines: { COLS, ROWS } }, {
    params: packParams([rows, cols, chunk]),
    buffers: [x.buffer, out.buffer],
    workgroups: [Math.ceil(groups / y), y, rows > 0 ? Math.ceil(rows / chunk) : 1],
  });
}
