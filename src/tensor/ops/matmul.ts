/**
 * Differentiable matrix products: `matmul` (batched, any transposes, a 2-D operand shared across
 * the batch) and `linear` (Hugging Face weight layout, optional bias). Both run the tiled kernel
 * of shaders/matmul.wgsl; their backwards are products with other transposes plus a column sum.
 */
import { gpu } from "../../gpu/mod.ts";
import { record, registerOp } from "../autograd.ts";
import { fmtShape, sameShape, shapeSize, type Tensor } from "../tensor.ts";
import { toF16 } from "./elementwise_kernel.ts";
import { colsum } from "./colsum.ts";
import { type Gemm, gemmNew, type TileConfig, type TileName } from "./matmul_kernel.ts";

registerOp(
  "matmul",
  "C = op(A) @ op(B), A [..., M, K] (or [..., K, M] with transA), B [..., K, N] (or [..., N, K] " +
    "with transB) or 2-D shared across the batch; f32 (f16 inputs where the GPU has shader-f16)",
);
registerOp(
  "linear",
  "y = x @ W^T + b (+ residual), x [..., in], W [out, in], b [out], residual [..., out] f32 " +
    "(added in the GEMM's epilogue); W may be f16 where the GPU has shader-f16",
);

export interface MatmulOptions {
  transA?: boolean; // A is stored [..., K, M]
  transB?: boolean; // B is stored [..., N, K]
}

function describe(name: string, t: Tensor): string {
  return `${name} ${fmtShape(t.shape)} ${t.dtype}`;
}

function checkFloat(op: string, name: string, t: Tensor): void {
  if (t.dtype === "f32") return;
  if (t.dtype === "f16") {
    if (gpu().hasF16) return;
    throw new Error(`${op}: ${describe(name, t)} needs shader-f16, which this GPU lacks`);
  }
  throw new Error(`${op}: ${describe(name, t)} must be f32 or f16`);
}

/** Sizes of one `matmul` call; a shared operand is 2-D while the other has batch dims. */
interface Plan {
  batchShape: number[];
  batch: number;
  m: number;
  n: number;
  k: number;
  transA: boolean;
  transB: boolean;
  sharedA: boolean;
  sharedB: boolean;
}

function plan(a: Tensor, b: Tensor, options: MatmulOptions): Plan {
  const transA = options.transA ?? false, transB = options.transB ?? false;
  checkFloat("matmul", "a", a);
  checkFloat("matmul", "b", b);
  for (const [name, t] of [["a", a], ["b", b]] as const) {
    if (t.rank < 2) throw new Error(`matmul: ${describe(name, t)} needs at least 2 dims`);
  }
  const [ra, ca] = a.shape.slice(-2), [rb, cb] = b.shape.slice(-2);
  const [m, ka] = transA ? [ca, ra] : [ra, ca];
  const [kb, n] = transB ? [cb, rb] : [rb, cb];
  if (ka !== kb) {
    throw new Error(
      `matmul: inner dimensions differ: ${describe("a", a)} (transA=${transA}) has K=${ka}, ` +
        `${describe("b", b)} (transB=${transB}) has K=${kb}`,
    );
  }
  const batchA = a.shape.slice(0, -2), batchB = b.shape.slice(0, -2);
  const sharedA = batchA.length === 0 && batchB.length > 0;
  const sharedB = batchB.length === 0 && batchA.length > 0;
  if (!sharedA && !sharedB && !sameShape(batchA, batchB)) {
    throw new Error(
      `matmul: batch dimensions differ: ${describe("a", a)} vs ${describe("b", b)} ` +
        `(they must match, or one operand must be 2-D)`,
    );
  }
  const batchShape = sharedA ? batchB : batchA;
  const batch = batchShape.reduce((x, y) => x * y, 1);
  return { batchShape, batch, m, n, k: ka, transA, transB, sharedA, sharedB };
}

function forward(a: Tensor, b: Tensor, p: Plan, tile?: TileName | TileConfig): Tensor {
  const { batch, m, n, k, transA, transB } = p;
  const outShape = [...p.batchShape, m, n];
  if (p.sharedB && !transA) {
    // Rows of every batch entry are contiguous: one 2-D product with batch * M rows.
    const d = { batch: 1, m: batch * m, n, k, transA, transB, strideA: 0, strideB: 0 };
    return gemmNew(a, b, outShape, d, { tile });
  }
  const d = {
    batch,
    m,
    n,
    k,
    transA,
    transB,
    strideA: p.sharedA ? 0 : m * k,
    strideB: p.sharedB ? 0 : k * n,
  };
  return gemmNew(a, b, outShape, d, { tile });
}

/** A product whose result is summed over the batch when its target was shared. */
function gradProduct(x: Tensor, y: Tensor, d: Gemm, target: Tensor, shared: boolean): Tensor {
  if (!shared) return gemmNew(x, y, target.shape, d);
  const full = gemmNew(x, y, [d.batch, target.size], d);
  const sum = colsum(full, d.batch, target.size, target.shape);
  full.dispose();
  return sum;
}

function grads(a: Tensor, b: Tensor, g: Tensor, p: Plan): (Tensor | null)[] {
  const { batch, m, n, k, transA: tA, transB: tB } = p;
  const sG = m * n, sA = p.sharedA ? 0 : m * k, sB = p.sharedB ? 0 : k * n;
  // d op(A) = G @ op(B)^T and d op(B) = op(A)^T @ G, written for the stored layouts.
  let ga: Tensor | null = null, gb: Tensor | null = null;
  if (a.requiresGrad) {
    ga = tA
      ? gradProduct(
        b,
        g,
        {
          batch,
          m: k,
          n: m,
          k: n,
          transA: tB,
          transB: true,
          strideA: sB,
          strideB: sG,
        },
        a,
        p.sharedA,
      )
      : gradProduct(
        g,
        b,
        {
          batch,
          m,
          n: k,
          k: n,
          transA: false,
          transB: !tB,
          strideA: sG,
          strideB: sB,
        },
        a,
        p.sharedA,
      );
  }
  if (b.requiresGrad) {
    // A shared B under an untransposed A: fold the batch into one product over batch * M rows.
    const fold = p.sharedB && !tA;
    const bt = fold ? 1 : batch, mm = fold ? batch * m : m;
    const d: Gemm = tB
      ? { batch: bt, m: n, n: k, k: mm, transA: true, transB: tA, strideA: sG, strideB: sA }
      : { batch: bt, m: k, n, k: mm, transA: !tA, transB: false, strideA: sA, strideB: sG };
    gb = tB
      ? gradProduct(g, a, d, b, p.sharedB && !fold)
      : gradProduct(a, g, d, b, p.sharedB && !fold);
  }
  return [ga, gb];
}

/** C = op(A) @ op(B) in f32; see the `matmul` entry of the op registry for the shapes. */
export function matmul(a: Tensor, b: Tensor, options: MatmulOptions = {}): Tensor {
  const p = plan(a, b, options);
  const out = forward(a, b, p);
  return record("matmul", [a, b], out, (g) => grads(a, b, g, p));
}

/** The forward of `matmul` with a chosen tile (benchmarks and tests); records no backward. */
export function matmulTiled(
  a: Tensor,
  b: Tensor,
  options: MatmulOptions & { tile?: TileName | TileConfig } = {},
): Tensor {
  return forward(a, b, plan(a, b, options), options.tile);
}

export interface LinearOptions {
  /**
   * residual [..., out] f32: the result is residual + x W^T (+ b), summed in the GEMM's epilogue
   * (no separate add, no temporary); its gradient is the output's, passed through.
   */
  residual?: Tensor | null;
  /**
   * Mixed precision (torch autocast's f16 linear): an f16 copy of `weight` to multiply with. The
   * forward runs x16 @ half^T (x cast to f16 unless it is f16) with f32 accumulation and an f32
   * output; the backward casts the output gradient to f16 and runs dx = g16 @ half and
   * dW = g16^T @ x16, both accumulated and returned in f32, dW to `weight` (the f32 master: the
   * cast's backward). Only x16 is kept for the backward.
   */
  half?: Tensor | null;
}

/** y [..., out] = x [..., in] @ weight^T + bias (+ residual), weight [out, in], bias [out]. */
export function linear(
  x: Tensor,
  weight: Tensor,
  bias: Tensor | null = null,
  options: LinearOptions = {},
): Tensor {
  const residual = options.residual ?? null, half = options.half ?? null;
  for (const [name, t] of [["x", x], ["weight", weight], ["bias", bias], ["half", half]] as const) {
    if (t) checkFloat("linear", name, t);
  }
  const bad = (why: string) =>
    new Error(
      `linear: ${why}: ${describe("x", x)}, ${describe("weight", weight)}` +
        (bias ? `, ${describe("bias", bias)}` : "") +
        (residual ? `, ${describe("residual", residual)}` : "") +
        (half ? `, ${describe("half", half)}` : ""),
    );
  if (weight.rank !== 2) throw bad("weight must be 2-D [out, in]");
  const [outF, inF] = weight.shape;
  if (x.rank < 1 || x.shape[x.rank - 1] !== inF) throw bad(`x must end in in=${inF}`);
  if (bias && (bias.rank !== 1 || bias.shape[0] !== outF)) throw bad(`bias must be [${outF}]`);
  if (half && (half.dtype !== "f16" || !sameShape(half.shape, weight.shape))) {
    throw bad(`half must be the f16 copy of weight, ${fmtShape(weight.shape)}`);
  }
  const outShape = [...x.shape.slice(0, -1), outF];
  if (residual && (residual.dtype !== "f32" || !sameShape(residual.shape, outShape))) {
    throw bad(`residual must be f32 ${fmtShape(outShape)}`);
  }
  const rows = shapeSize(x.shape.slice(0, -1));
  const flat = (m: number, n: number, k: number, transA: boolean, transB: boolean): Gemm => ({
    batch: 1,
    m,
    n,
    k,
    transA,
    transB,
    strideA: 0,
    strideB: 0,
  });
  // Under mixed precision both operands are f16; x16 is what the backward keeps.
  const xs = half && x.dtype !== "f16" ? toF16(x) : x, ws = half ?? weight;
  const out = gemmNew(xs, ws, outShape, flat(rows, outF, inF, false, true), { bias, residual });
  const inputs = bias ? [x, weight, bias] : [x, weight];
  if (residual) inputs.push(residual);
  const node = record("linear", inputs, out, (g) => {
    const gs = half ? toF16(g) : g; // autocast: the incoming gradient in f16
    const gx = x.requiresGrad
      ? gemmNew(gs, ws, x.shape, flat(rows, inF, outF, false, false))
      : null;
    const gw = weight.requiresGrad
      ? gemmNew(gs, xs, weight.shape, flat(outF, inF, rows, true, false))
      : null;
    if (gs !== g) gs.dispose();
    if (xs !== x) xs.dispose();
    const gb = bias?.requiresGrad ? colsum(g, rows, outF, bias.shape) : null;
    const grads = bias ? [gx, gw, gb] : [gx, gw];
    // The residual's gradient is g itself: the tape stores it once and clones on reuse.
    if (residual) grads.push(residual.requiresGrad ? g : null);
    return grads;
  });
  if (!node.node && xs !== x) xs.dispose(); // the queue runs the product before any reuse
  return node;
}
