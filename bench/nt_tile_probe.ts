/**
 * A tile for x W^T (both operands contiguous along k) that keeps them along k in workgroup memory
 * too, timed against matmul.wgsl's "large" tile on the same product, the output checked against
 * it. matmul.wgsl stages its tiles k-major, so an operand read as vec4s along k goes into workgroup
 * memory as four scalar stores; here each staged vec4 is one 16-byte store ([row][k] tiles, rows
 * padded by one vec4), and the inner loop reads one vec4 of k per row and column and chains four
 * multiply-adds into each scalar sum: the same products added in the same order as matmul.wgsl
 * (bit for bit when K is not split). Each thread owns 8 rows (lid.y + 16 i) and 8 columns
 * (lid.x + 16 j) of a 128 x 128 block; `--bk` k per stage (8 or 16).
 *
 *   deno run -A bench/nt_tile_probe.ts [--shapes=4096x4096x4096,6144x4864x896] [--bk=8,16]
 *     [--reps=10]
 */
import { initGpu } from "../src/gpu/mod.ts";
import { gemm, Tensor } from "../src/tensor/mod.ts";
import {
  bestProfiledMs,
  bestRawMs,
  gemmBuffers,
  randomData,
  rawDispatch,
  readF32,
} from "./raw_kernel.ts";

const args = new Map(Deno.args.map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const reps = Number(args.get("reps") ?? 10);
const shapes = (args.get("shapes") ?? "4096x4096x4096,6144x4864x896,6144x896x4864")
  .split(",").map((s) => s.split("x").map(Number));
const bks = (args.get("bk") ?? "8,16").split(",").map(Number);

/** The kernel's WGSL for `bk` k per stage (a multiple of 4). */
function tileCode(bk: number): string {
  const kc = bk / 4; // vec4s of k per staged row
  const slots = (128 * kc) / 256; // staged vec4s per thread per operand
  const range = (n: number) => Array.from({ length: n }, (_, i) => i);
  const stage = (k0: string) =>
    range(slots).map((l) =>
      `sa${l} = fetch_a(m0, ${k0}, tid + ${l * 256}u); sb${l} = fetch_b(n0, ${k0}, tid + ${
        l * 256
      }u);`
    ).join("\n      ");
  const put = (buf: string) =>
    range(slots).map((l) => `put(${buf}, tid + ${l * 256}u, sa${l}, sb${l});`).join("\n      ");
  // One vec4 of k: the thread's 8 row vec4s, then each column vec4 against them.
  const step = (c: number) => {
    const lines = range(8).map((i) => `let a${i} = As[ao + ${i * 16}u * RS + ${c}u];`);
    for (let j = 0; j < 8; j++) {
      lines.push(`{ let b = Bs[bo + ${j * 16}u * RS + ${c}u];`);
      for (let i = 0; i < 8; i++) {
        const s = `s${i * 8 + j}`;
        lines.push(
          `  ${s} = fma(a${i}.w, b.w, fma(a${i}.z, b.z, fma(a${i}.y, b.y, fma(a${i}.x, b.x, ${s}))));`,
        );
      }
      lines.push("}");
    }
    return `{\n      ${lines.join("\n      ")}\n    }`;
  };
  const stores = range(64).map((q) => {
    const i = Math.floor(q / 8), j = q % 8;
    return `store(m0 + lid.y + ${i * 16}u, n0 + lid.x + ${j * 16}u, s${q});`;
  });
  return `
const KC: u32 = ${kc}u;
const RS: u32 = KC + 1u; // padded row stride of a staged tile, in vec4s
const TILE: u32 = 128u * RS;
struct Params { m: u32, n: u32, k: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
var<workgroup> As: array<vec4<f32>, 2u * TILE>;
var<workgroup> Bs: array<vec4<f32>, 2u * TILE>;
// Slot s of a staged tile: tile row s / KC at k (s % KC) * 4; 0 past the rows or K.
fn slot_at(r0: u32, rows: u32, k0: u32, s: u32) -> vec2<u32> {
  let r = r0 + s / KC;
  let k = k0 + (s % KC) * 4u;
  return vec2<u32>(select(0u, (r * p.k + k) / 4u, r < rows && k < p.k), u32(r < rows && k < p.k));
}
fn fetch_a(r0: u32, k0: u32, s: u32) -> vec4<f32> {
  let e = slot_at(r0, p.m, k0, s);
  return select(vec4<f32>(0.0), a[e.x], e.y == 1u);
}
fn fetch_b(r0: u32, k0: u32, s: u32) -> vec4<f32> {
  let e = slot_at(r0, p.n, k0, s);
  return select(vec4<f32>(0.0), b[e.x], e.y == 1u);
}
fn put(buf: u32, s: u32, va: vec4<f32>, vb: vec4<f32>) {
  let at = buf * TILE + (s / KC) * RS + s % KC;
  As[at] = va;
  Bs[at] = vb;
}
fn store(i: u32, j: u32, v: f32) {
  if (i < p.m && j < p.n) { c[i * p.n + j] = v; }
}
@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let tid = lid.y * 16u + lid.x;
  let m0 = wid.y * 128u;
  let n0 = wid.x * 128u;
  ${range(64).map((q) => `var s${q} = 0.0;`).join(" ")}
  ${range(slots).map((l) => `var sa${l} = vec4<f32>(0.0); var sb${l} = vec4<f32>(0.0);`).join(" ")}
  let stages = (p.k + ${bk}u - 1u) / ${bk}u;
  ${stage("0u")}
  ${put("0u")}
  workgroupBarrier();
  for (var t = 0u; t < stages; t++) {
    let cur = t % 2u;
    let more = t + 1u < stages;
    if (more) {
      ${stage(`(t + 1u) * ${bk}u`)}
    }
    let ao = cur * TILE + lid.y * RS;
    let bo = cur * TILE + lid.x * RS;
    ${range(kc).map(step).join("\n    ")}
    if (more) {
      ${put("1u - cur")}
    }
    workgroupBarrier();
  }
  ${stores.join("\n  ")}
}
`;
}

await initGpu();

for (const [M, N, K] of shapes) {
  if (K % 4 !== 0) throw new Error(`--shapes: K = ${K} must be a multiple of 4`);
  const flops = 2 * M * N * K;
  const A = Tensor.from(randomData(M * K, 1), [M, K], "f32", "a");
  const B = Tensor.from(randomData(N * K, 2), [N, K], "f32", "b");
  // matmul.wgsl's large tile over the whole K, as this tile runs (no split).
  const d = { batch: 1, m: M, n: N, k: K, transA: false, transB: true, strideA: 0, strideB: 0 };
  const base = () => {
    const y = Tensor.empty([M, N], "f32", "y");
    gemm(A, B, y, d, { tile: "large", splits: 1 });
    return y;
  };
  for (let i = 0; i < 20; i++) base().dispose(); // compiled, clocks up
  const ref = base();
  const want = await readF32(ref.buffer, M * N);
  ref.dispose();
  const baseMs = await bestProfiledMs(() => base().dispose(), reps);
  const shape = `${M}x${N}x${K}`;
  console.log(
    JSON.stringify({ shape, cfg: "matmul.wgsl large", ms: baseMs, tflops: flops / baseMs / 1e9 }),
  );
  const { out, params } = gemmBuffers(M, N, K);
  for (const bk of bks) {
    const bindings: [number, GPUBuffer][] = [[0, params], [1, A.buffer], [2, B.buffer], [3, out]];
    const run = rawDispatch(tileCode(bk), bindings, [Math.ceil(N / 128), Math.ceil(M / 128)]);
    const ms = await bestRawMs(run, reps);
    const got = await readF32(out, M * N);
    let worst = 0;
    for (let i = 0; i < M * N; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
    console.log(
      JSON.stringify({
        shape,
        cfg: `nt bk${bk}`,
        ms,
        tflops: flops / ms / 1e9,
        max_abs_diff: worst,
      }),
    );
  }
  out.destroy();
  params.destroy();
  A.dispose();
  B.dispose();
}
