/**
 * The LoRA half of bench/gemm_shapes_device.ts (`--lora=R`): for one linear layer, the thin
 * products at every K split count, and the adapted layer's dispatch sequences as they were
 * (separate low-rank product, then an add over the output) and as `loraLinear` runs them now
 * (the low-rank product joined to the base one along K, `matmulCat`). One JSON line per
 * measurement.
 */
import {
  accumulate,
  gemm,
  linear,
  matmul,
  matmulCat,
  pickTile,
  scaleInPlace,
  Tensor,
} from "../src/tensor/mod.ts";
import { timeGpu } from "./gpu_timer.ts";

export interface LoraOperands {
  x: Tensor; // [N, in]
  g: Tensor; // [N, out], the output's gradient
  low: Tensor; // [N, r] = x A^T
  gl: Tensor; // [N, r] = g B
  a: Tensor; // [r, in]
  b: Tensor; // [out, r]
}

/** One product of a bench: its operands, transpositions and sizes. */
export interface Product {
  op: string;
  a: Tensor;
  b: Tensor;
  transA: boolean;
  transB: boolean;
  m: number;
  n: number;
  k: number;
}

/**
 * u = x A^T, gu = g B, dB = g^T u, dA = gu^T x with the default tile at split counts 1, 2, 4, ...
 * and at the count `splitPolicy` picks ("default"): how far more blocks pay for thin products.
 */
export async function timeThinSplits(
  o: LoraOperands,
  reps: number,
  tags: Record<string, unknown>,
): Promise<void> {
  const [rows, inF] = o.x.shape, outF = o.g.shape[1], r = o.a.shape[0];
  const thin: Product[] = [
    { op: "u", a: o.x, b: o.a, transA: false, transB: true, m: rows, n: r, k: inF },
    { op: "gu", a: o.g, b: o.b, transA: false, transB: false, m: rows, n: r, k: outF },
    { op: "dB", a: o.g, b: o.low, transA: true, transB: false, m: outF, n: r, k: rows },
    { op: "dA", a: o.gl, b: o.x, transA: true, transB: false, m: r, n: inF, k: rows },
  ];
  for (const p of thin) {
    const tile = pickTile(1, p.m, p.n);
    const d = { batch: 1, ...p, strideA: 0, strideB: 0 };
    const stages = Math.ceil(p.k / tile.bk);
    const counts: (number | "default")[] = ["default"];
    for (let s = 1; s <= Math.min(128, stages); s *= 2) counts.push(s);
    for (const splits of counts) {
      const run = () => {
        const out = Tensor.empty([p.m, p.n]);
        gemm(p.a, p.b, out, d, typeof splits === "number" ? { splits } : {});
        out.dispose();
      };
      const t = await timeGpu(run, { reps, perSpan: 8 });
      const tflops = +(2 * p.m * p.n * p.k / (t.medianMs * 1e9)).toFixed(2);
      console.log(JSON.stringify({
        fig: "lora_thin_split",
        ...tags,
        op: p.op,
        m: p.m,
        n: p.n,
        k: p.k,
        splits,
        us: +(t.medianMs * 1e3).toFixed(1),
        tflops,
      }));
    }
  }
}

/**
 * The adapted layer's forward and input gradient, old and new sequences, `w` f32 or f16, beside
 * the base product alone (fwd_base: y = x W^T, dx_base: dx = g W, full fine-tuning's):
 * fwd_old: y = x W^T, u = x A^T, v = u B^T, y += s v; fwd_new: u = x A^T, y = [x | u] @ [W | sB]^T.
 * dx_old: gl = s g B, dx = g W, dx += gl A; dx_new: gl = g B, dx = [g | gl] @ [W ; s A].
 * dAB: dB = s g^T u, dA = s gl^T x (the same dispatches either way).
 */
export async function timeLoraPaths(
  o: LoraOperands,
  w: Tensor,
  reps: number,
  tags: Record<string, unknown>,
): Promise<void> {
  const s = 2;
  const seqs: Record<string, () => void> = {
    // The base product alone, as full fine-tuning runs it: what the adapter's join costs on top.
    fwd_base: () => linear(o.x, w).dispose(),
    fwd_old: () => {
      const y = linear(o.x, w), u = linear(o.x, o.a), v = linear(u, o.b);
      accumulate(y, v, s);
      for (const t of [y, u, v]) t.dispose();
    },
    fwd_new: () => {
      const u = linear(o.x, o.a);
      const y = matmulCat({ a: o.x, b: w, transB: true }, { a: u, b: o.b, transB: true }, {
        scale: s,
      });
      for (const t of [y, u]) t.dispose();
    },
    dx_base: () => matmul(o.g, w).dispose(),
    dx_old: () => {
      const gl = matmul(o.g, o.b);
      scaleInPlace(gl, s);
      const dx = matmul(o.g, w), viaA = matmul(gl, o.a);
      accumulate(dx, viaA);
      for (const t of [gl, dx, viaA]) t.dispose();
    },
    dx_new: () => {
      const gl = matmul(o.g, o.b);
      const dx = matmulCat({ a: o.g, b: w }, { a: gl, b: o.a }, { scale: s });
      for (const t of [gl, dx]) t.dispose();
    },
    dAB: () => {
      const gb = matmul(o.g, o.low, { transA: true }), ga = matmul(o.gl, o.x, { transA: true });
      scaleInPlace(gb, s);
      scaleInPlace(ga, s);
      gb.dispose();
      ga.dispose();
    },
  };
  for (const [seq, fn] of Object.entries(seqs)) {
    const t = await timeGpu(fn, { reps, perSpan: 4 });
    const us = +(t.medianMs * 1e3).toFixed(1);
    console.log(JSON.stringify({ fig: "lora_path", ...tags, w: w.dtype, seq, us }));
  }
}
