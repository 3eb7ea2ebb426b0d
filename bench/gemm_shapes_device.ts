/**
 * The GEMMs of a training step, per tile: for every linear layer of a Qwen2.5 shape at `rows`
 * tokens per micro-batch, the forward (x W^T), the input gradient (g W) and the weight gradient
 * (g^T x), with f32 weights and (where the GPU has shader-f16) f16 weights, timed with each tile
 * configuration; one JSON line per measurement with TFLOP/s, then the best tile per product and
 * what the default policy (`pickTile`, split-K) picks. For tuning `pickTile` on a GPU:
 *   deno run -A bench/gemm_shapes_device.ts [--shape=0.5b] [--rows=3072,6144] [--reps=5]
 * --lora=R times the six thin products of a rank-R adapter on every linear layer instead (f32):
 * u = x A^T, v = u B^T, dB = g^T u, gu = g B, dA = gu^T x, dx = gu A; then the thin ones at each K
 * split count and the adapted layer's forward / input gradient as separate products plus adds
 * against the K-joined GEMMs of `loraLinear` and the base product alone (bench/lora_gemm_paths.ts).
 * --paths-only skips the per-tile part, --no-thin-splits the thin products' split counts.
 */
import { initGpu } from "../src/gpu/mod.ts";
import { matmulTiled, Tensor, type TileConfig, TILES } from "../src/tensor/mod.ts";
import { rng } from "../src/testing/mod.ts";
import { isQwen25Shape, QWEN25_SHAPES } from "./grpo_setup.ts";
import { timeGpu, warmGpu } from "./gpu_timer.ts";
import { type Product, timeLoraPaths, timeThinSplits } from "./lora_gemm_paths.ts";

const args = new Map(Deno.args.map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const shapeName = args.get("shape") ?? "0.5b";
if (!isQwen25Shape(shapeName)) throw new Error(`--shape=${shapeName}: use 0.5b or 1.5b`);
const s = QWEN25_SHAPES[shapeName];
const rowsList = (args.get("rows") ?? "3072,6144").split(",").map(Number);
const reps = Number(args.get("reps") ?? 5);
const g = await initGpu();

/** Candidate tiles: the three named ones and a few shapes between them. */
const CANDIDATES: Record<string, TileConfig> = {
  ...TILES,
  // Thin blocks for products with a LoRA rank (32) as one output side. (K steps other than 8 and
  // the 256-row thin blocks, which need them, went when the tile's k steps were written out once.)
  thinN: { wgX: 4, wgY: 16, tm: 8, tn: 8, bk: 8 },
  thinM: { wgX: 16, wgY: 4, tm: 8, tn: 8, bk: 8 },
};
const loraRank = Number(args.get("lora") ?? 0);
const pathsOnly = args.has("paths-only");

const headDim = s.hiddenSize / s.numAttentionHeads;
const linears: [string, number, number][] = [
  ["q", s.hiddenSize, s.hiddenSize],
  ["kv", s.hiddenSize, s.numKeyValueHeads * headDim],
  ["o", s.hiddenSize, s.hiddenSize],
  ["gate_up", s.hiddenSize, s.intermediateSize],
  ["down", s.intermediateSize, s.hiddenSize],
];

function rand(n: number, seed: number): Float32Array {
  const r = rng(seed), out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = r() - 0.5;
  return out;
}

/** Times `p` with the default policy and every candidate tile; logs each and the best. */
async function timeProduct(p: Product, tags: Record<string, unknown>): Promise<void> {
  const flop = 2 * p.m * p.n * p.k;
  const results: { tile: string; tflops: number }[] = [];
  // The operands were just made on the host: the GPU idled at a low clock meanwhile.
  await warmGpu(() => matmulTiled(p.a, p.b, { transA: p.transA, transB: p.transB }).dispose());
  for (const [tile, cfg] of [["default", null], ...Object.entries(CANDIDATES)] as const) {
    const opts = { transA: p.transA, transB: p.transB, ...(cfg ? { tile: cfg } : {}) };
    let t;
    try {
      t = await timeGpu(() => matmulTiled(p.a, p.b, opts).dispose(), { reps, perSpan: 4 });
    } catch (e) {
      console.log(JSON.stringify({ ...tags, op: p.op, tile, error: String(e).slice(0, 120) }));
      continue;
    }
    const tflops = +(flop / (t.medianMs * 1e9)).toFixed(2);
    results.push({ tile, tflops });
    console.log(JSON.stringify({
      ...tags,
      op: p.op,
      m: p.m,
      n: p.n,
      k: p.k,
      tile,
      ms: +t.medianMs.toFixed(4),
      tflops,
    }));
  }
  const best = results.slice(1).reduce((a, b) => (b.tflops > a.tflops ? b : a));
  console.log(JSON.stringify({
    fig: "gemm_best",
    ...tags,
    op: p.op,
    best: best.tile,
    best_tflops: best.tflops,
    default_tflops: results[0].tflops,
  }));
}

for (const rows of loraRank > 0 ? rowsList : []) {
  for (const [name, inF, outF] of linears) {
    const r = loraRank;
    const x = Tensor.from(rand(rows * inF, 1), [rows, inF]);
    const gy = Tensor.from(rand(rows * outF, 2), [rows, outF]);
    const u = Tensor.from(rand(rows * r, 3), [rows, r]);
    const gu = Tensor.from(rand(rows * r, 4), [rows, r]);
    const A = Tensor.from(rand(r * inF, 5), [r, inF]);
    const B = Tensor.from(rand(outF * r, 6), [outF, r]);
    const products: Product[] = [
      { op: "u", a: x, b: A, transA: false, transB: true, m: rows, n: r, k: inF },
      { op: "v", a: u, b: B, transA: false, transB: true, m: rows, n: outF, k: r },
      { op: "dB", a: gy, b: u, transA: true, transB: false, m: outF, n: r, k: rows },
      { op: "gu", a: gy, b: B, transA: false, transB: false, m: rows, n: r, k: outF },
      { op: "dA", a: gu, b: x, transA: true, transB: false, m: r, n: inF, k: rows },
      { op: "dx", a: gu, b: A, transA: false, transB: false, m: rows, n: inF, k: r },
    ];
    const tags = { rows, linear: name, lora: r };
    for (const p of pathsOnly ? [] : products) await timeProduct(p, tags);
    const o = { x, g: gy, low: u, gl: gu, a: A, b: B };
    if (!args.has("no-thin-splits")) await timeThinSplits(o, reps, tags);
    for (const wType of g.hasF16 ? ["f32", "f16"] as const : ["f32"] as const) {
      const w = Tensor.from(rand(outF * inF, 7), [outF, inF], wType);
      await timeLoraPaths(o, w, reps, tags);
      w.dispose();
    }
    for (const t of [x, gy, u, gu, A, B]) t.dispose();
  }
}

for (const rows of loraRank > 0 ? [] : rowsList) {
  for (const [name, inF, outF] of linears) {
    const x = Tensor.from(rand(rows * inF, 1), [rows, inF]);
    const gy = Tensor.from(rand(rows * outF, 2), [rows, outF]);
    for (const wType of g.hasF16 ? ["f32", "f16"] as const : ["f32"] as const) {
      const w = Tensor.from(rand(outF * inF, 3), [outF, inF], wType);
      const products = [
        { op: "fwd", a: x, b: w, transA: false, transB: true, m: rows, n: outF, k: inF },
        { op: "dx", a: gy, b: w, transA: false, transB: false, m: rows, n: inF, k: outF },
        ...(wType === "f32"
          ? [{ op: "dW", a: gy, b: x, transA: true, transB: false, m: outF, n: inF, k: rows }]
          : []),
      ];
      for (const p of products) await timeProduct(p, { rows, linear: name, w: wType });
      w.dispose();
    }
    x.dispose();
    gy.dispose();
  }
}
