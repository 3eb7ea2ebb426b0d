/**
 * Does f16 arithmetic make a GEMM faster than f32 on this adapter? (The bare multiply-add rate by
 * number type is bench/fma_rate_probe.ts.) One JSON line per probe:
 * - `gemm`: one 128x128-block GEMM (8x8 per thread, double-buffered workgroup tiles) at n^3 in
 *   three arithmetics: f32 operands and sums; f16 operands with f32 sums; f16 operands summed in
 *   f16 over each K step (`bk` products) and then added into f32. Each is checked against a few
 *   f64 entries.
 *   deno run -A bench/hfma_probe.ts [--n=4096] [--bk=8,16,32]
 */
import { initGpu } from "../src/gpu/mod.ts";
import { f16BitsToF32, f32ToF16Bits } from "../src/tensor/mod.ts";
import { rng } from "../src/testing/mod.ts";
import { timeGpu } from "./gpu_timer.ts";

const args = new Map(Deno.args.map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const n = Number(args.get("n") ?? 4096);
const bks = (args.get("bk") ?? "8,16,32").split(",").map(Number);
const g = await initGpu();
const f16ok = g.device.features.has("shader-f16");
const t0 = performance.now();
const emit = (o: Record<string, unknown>) =>
  console.log(JSON.stringify({ adapter: g.adapterName, s: (performance.now() - t0) / 1e3, ...o }));

function pipeline(code: string): GPUComputePipeline {
  const module = g.device.createShaderModule({ code });
  return g.device.createComputePipeline({
    layout: "auto",
    compute: { module, entryPoint: "main" },
  });
}

function run(p: GPUComputePipeline, buffers: GPUBuffer[], groups: [number, number]): void {
  const enc = g.device.createCommandEncoder();
  const pass = enc.beginComputePass();
  pass.setPipeline(p);
  pass.setBindGroup(
    0,
    g.device.createBindGroup({
      layout: p.getBindGroupLayout(0),
      entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
    }),
  );
  pass.dispatchWorkgroups(groups[0], groups[1]);
  pass.end();
  g.device.queue.submit([enc.finish()]);
}

function storage(bytes: ArrayBufferView | number): GPUBuffer {
  const size = typeof bytes === "number" ? bytes : bytes.byteLength;
  const buf = g.device.createBuffer({
    size,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
  });
  if (typeof bytes !== "number") {
    const view = new Uint8Array(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteLength);
    g.device.queue.writeBuffer(buf, 0, view);
  }
  return buf;
}

type Mode = "f32" | "h_f32sum" | "h_f16sum";

/** A^T stored [K, M], B stored [K, N] (both contiguous along the output's axes), C [M, N] f32. */
function gemmCode(mode: Mode, bk: number): string {
  const s = mode === "f32" ? "f32" : "f16";
  const acc = mode === "h_f16sum" ? "f16" : "f32";
  const lines = [0, 1, 2, 3].flatMap((r) => [
    `h[${2 * r}] = fma(vec4<${acc}>(${acc}(a0[${r}])), b0, h[${2 * r}]);`,
    `h[${2 * r + 1}] = fma(vec4<${acc}>(${acc}(a0[${r}])), b1, h[${2 * r + 1}]);`,
    `h[${2 * r + 8}] = fma(vec4<${acc}>(${acc}(a1[${r}])), b0, h[${2 * r + 8}]);`,
    `h[${2 * r + 9}] = fma(vec4<${acc}>(${acc}(a1[${r}])), b1, h[${2 * r + 9}]);`,
  ]).join("\n        ");
  const cast = acc === s ? "" : `vec4<${acc}>`;
  // Constant indices only: a dynamically indexed register array spills to local memory.
  const flush = Array.from({ length: 16 }, (_, i) => `acc[${i}] += vec4<f32>(h[${i}]);`)
    .join(" ");
  const store = [0, 1, 2, 3].flatMap((r) => [
    `c[((m0 + lid.y) * 4u + ${r}u) * nq + n0 + lid.x] = acc[${2 * r}];`,
    `c[((m0 + lid.y) * 4u + ${r}u) * nq + n0 + lid.x + 16u] = acc[${2 * r + 1}];`,
    `c[((m0 + lid.y + 16u) * 4u + ${r}u) * nq + n0 + lid.x] = acc[${2 * r + 8}];`,
    `c[((m0 + lid.y + 16u) * 4u + ${r}u) * nq + n0 + lid.x + 16u] = acc[${2 * r + 9}];`,
  ]).join("\n  ");
  return `${s === "f16" ? "enable f16;" : ""}
const BK = ${bk}u;
const AS = 33u; // 128 / 4 + 1 vec4 per k row
const TILE = BK * AS;
const LOADS = BK * 32u / 256u;
struct P { m: u32, n: u32, k: u32 }
@group(0) @binding(0) var<storage, read> a: array<vec4<${s}>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<${s}>>;
@group(0) @binding(2) var<storage, read_write> c: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> p: P;
var<workgroup> As: array<vec4<${s}>, ${2 * bk * 33}>;
var<workgroup> Bs: array<vec4<${s}>, ${2 * bk * 33}>;
@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let tid = lid.y * 16u + lid.x;
  let mq = p.m / 4u;
  let nq = p.n / 4u;
  let m0 = wid.y * 32u; // in vec4s
  let n0 = wid.x * 32u;
  var acc: array<vec4<f32>, 16>;
  var pa: array<vec4<${s}>, LOADS>;
  var pb: array<vec4<${s}>, LOADS>;
  for (var l = 0u; l < LOADS; l++) {
    let sl = tid + l * 256u;
    As[(sl / 32u) * AS + sl % 32u] = a[(sl / 32u) * mq + m0 + sl % 32u];
    Bs[(sl / 32u) * AS + sl % 32u] = b[(sl / 32u) * nq + n0 + sl % 32u];
  }
  workgroupBarrier();
  let tiles = p.k / BK;
  for (var t = 0u; t < tiles; t++) {
    let cur = t % 2u;
    let more = t + 1u < tiles;
    if (more) {
      for (var l = 0u; l < LOADS; l++) {
        let sl = tid + l * 256u;
        let kk = (t + 1u) * BK + sl / 32u;
        pa[l] = a[kk * mq + m0 + sl % 32u];
        pb[l] = b[kk * nq + n0 + sl % 32u];
      }
    }
    var h = array<vec4<${acc}>, 16>();
    for (var kk = 0u; kk < BK; kk++) {
      let a0 = As[cur * TILE + kk * AS + lid.y];
      let a1 = As[cur * TILE + kk * AS + lid.y + 16u];
      let b0 = ${cast}(Bs[cur * TILE + kk * AS + lid.x]);
      let b1 = ${cast}(Bs[cur * TILE + kk * AS + lid.x + 16u]);
        ${lines}
    }
    ${flush}
    if (more) {
      for (var l = 0u; l < LOADS; l++) {
        let sl = tid + l * 256u;
        As[(1u - cur) * TILE + (sl / 32u) * AS + sl % 32u] = pa[l];
        Bs[(1u - cur) * TILE + (sl / 32u) * AS + sl % 32u] = pb[l];
      }
    }
    workgroupBarrier();
  }
  ${store}
}`;
}

async function gemm(mode: Mode, bk: number): Promise<void> {
  const half = mode !== "f32";
  const r = rng(3);
  const vals = (len: number) =>
    Float32Array.from({ length: len }, () => f16BitsToF32(f32ToF16Bits(r() * 2 - 1)));
  const at = vals(n * n), b = vals(n * n); // at [K, M]
  const pack = (x: Float32Array) => half ? Uint16Array.from(x, f32ToF16Bits) : x;
  const bufs = [storage(pack(at)), storage(pack(b)), storage(n * n * 4)];
  bufs.push(storage(new Uint32Array([n, n, n, 0])));
  let p: GPUComputePipeline;
  try {
    p = pipeline(gemmCode(mode, bk));
  } catch (e) {
    emit({ probe: "gemm", mode, bk, error: String(e) });
    return;
  }
  run(p, bufs, [n / 128, n / 128]);
  const [bytes] = await g.read([{ buffer: bufs[2], size: n * n * 4 }]);
  const c = new Float32Array(bytes);
  let worst = 0;
  for (let s = 0; s < 16; s++) {
    const i = Math.floor(r() * n), j = Math.floor(r() * n);
    let sum = 0, mag = 0;
    for (let k = 0; k < n; k++) {
      sum += at[k * n + i] * b[k * n + j];
      mag += Math.abs(at[k * n + i] * b[k * n + j]);
    }
    worst = Math.max(worst, Math.abs(c[i * n + j] - sum) / mag);
  }
  const t = await timeGpu(() => run(p, bufs, [n / 128, n / 128]), { reps: 5, perSpan: 10 });
  emit({
    probe: "gemm",
    mode,
    bk,
    n,
    ms: t.medianMs,
    tflops: 2 * n ** 3 / (t.medianMs * 1e9),
    relErr: worst,
  });
  for (const x of bufs) x.destroy();
}

for (const bk of bks) {
  await gemm("f32", bk);
  if (f16ok) {
    await gemm("h_f32sum", bk);
    await gemm("h_f16sum", bk);
  }
}
