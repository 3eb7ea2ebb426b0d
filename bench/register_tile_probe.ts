/**
 * Register tiles and k loops of the tiled GEMM, outside matmul.wgsl: the same block
 * (double-buffered k-major shared tiles, strided row groups, bounds-checked loads) generated for
 * RG x CG vec4 groups per thread with named registers, its loop over k kept or written out
 * (`unrollK`), timed against matmul.wgsl's "large" tile on each shape and layout (NT: x W^T, NN:
 * g W, TN: g^T x), the output checked against it. How matmul_tile.wgsl's written-out k loop and
 * its vec4 operand reads were found (bench/README.md). Variants that drop a part of the block
 * (`noLoads`, `noBarrier`) give wrong results on purpose: they time what that part costs.
 *   deno run -A bench/register_tile_probe.ts [--shapes=4096x4096x4096,...] [--layouts=NT,NN,TN]
 *     [--cfgs=r2c2_bk8,r2c2_bk8_u] [--reps=10]
 */
import { initGpu } from "../src/gpu/mod.ts";
import { matmulTiled, Tensor } from "../src/tensor/mod.ts";
import {
  bestProfiledMs,
  bestRawMs,
  gemmBuffers,
  randomData,
  rawDispatch,
  readF32,
} from "./raw_kernel.ts";

interface Cfg {
  rg: number;
  cg: number;
  wgX: number;
  wgY: number;
  bk: number;
  transA: boolean;
  transB: boolean;
  unrollK?: boolean;
  /** The k loop in a function that returns the sums as an array (matmul_tile.wgsl's form). */
  arrayRet?: boolean;
  /** Diagnosis only (wrong results): no global loads or shared stores after the first tile. */
  noLoads?: boolean;
  /** Diagnosis only (wrong results): no barrier in the k loop. */
  noBarrier?: boolean;
  /** Each k step's shared loads issued one step ahead, into a second set of registers. */
  ahead?: boolean;
  /** Operands contiguous along k (x W^T) read as one vec4 of 4 k per slot, stored as 4 scalars. */
  vecLoad?: boolean;
}

/**
 * The vec4 variant's reads and stores of operand `x` (a or b, bound as `x`4, contiguous along k,
 * `rows` its row count): slot s is row s / KC of the tile at k (s % KC) * 4, 0 past the rows and
 * K (K % 4 == 0); its four k go to four k rows of the k-major tile `tile`, one component each.
 */
function vecOperand(x: string, rows: string, tile: string, stride: string): string {
  return `fn fetch_${x}4(r0: u32, k0: u32, s: u32) -> vec4<f32> {
  let r = r0 + s / KC;
  let k = k0 + (s % KC) * 4u;
  let ok = r < p.${rows} && k < p.k;
  return select(vec4<f32>(0.0), ${x}4[select(0u, (r * p.k + k) / 4u, ok)], ok);
}
fn put4${x}(base: u32, s: u32, v: vec4<f32>) {
  let r = s / KC;
  let at = base + (s % KC) * 4u * ${stride} + r / 4u;
  ${tile}[at][r % 4u] = v.x;
  ${tile}[at + ${stride}][r % 4u] = v.y;
  ${tile}[at + 2u * ${stride}][r % 4u] = v.z;
  ${tile}[at + 3u * ${stride}][r % 4u] = v.w;
}`;
}

function gen(c: Cfg): string {
  const L: string[] = [];
  const bm = c.wgY * 4 * c.rg, bn = c.wgX * 4 * c.cg, nt = c.wgX * c.wgY;
  const la = bm * c.bk / 4 / nt, lb = bn * c.bk / 4 / nt;
  const acc = (g: number, e: number, h: number) => `acc${(g * 4 + e) * c.cg + h}`;
  const body = (kk: string) => {
    const inner: string[] = [];
    inner.push("{");
    for (let g = 0; g < c.rg; g++) {
      inner.push(`let a${g} = As[ao + ${kk} * AS_STRIDE + ${g}u * WG_Y];`);
    }
    for (let h = 0; h < c.cg; h++) {
      inner.push(`let b${h} = Bs[bo + ${kk} * BS_STRIDE + ${h}u * WG_X];`);
    }
    for (let g = 0; g < c.rg; g++) {
      for (let e = 0; e < 4; e++) {
        for (let h = 0; h < c.cg; h++) {
          inner.push(
            `${acc(g, e, h)} = fma(vec4<f32>(a${g}.${"xyzw"[e]}), b${h}, ${acc(g, e, h)});`,
          );
        }
      }
    }
    inner.push("}");
    return inner.join("\n      ");
  };
  let kloop = "";
  if (c.ahead) {
    // fragments of step kk in f{g}_{kk%2}; loads of kk+1 before the fmas of kk
    const ld = (kk: number) => {
      const o: string[] = [];
      for (let g = 0; g < c.rg; g++) {
        o.push(`let a${g}_${kk} = As[ao + ${kk}u * AS_STRIDE + ${g}u * WG_Y];`);
      }
      for (let h = 0; h < c.cg; h++) {
        o.push(`let b${h}_${kk} = Bs[bo + ${kk}u * BS_STRIDE + ${h}u * WG_X];`);
      }
      return o.join("\n    ");
    };
    kloop += ld(0) + "\n    ";
    for (let kk = 0; kk < c.bk; kk++) {
      if (kk + 1 < c.bk) kloop += ld(kk + 1) + "\n    ";
      for (let g = 0; g < c.rg; g++) {
        for (let e = 0; e < 4; e++) {
          for (let h = 0; h < c.cg; h++) {
            kloop += `${acc(g, e, h)} = fma(vec4<f32>(a${g}_${kk}.${"xyzw"[e]}), b${h}_${kk}, ${
              acc(g, e, h)
            });\n    `;
          }
        }
      }
    }
  } else if (c.unrollK) {
    for (let kk = 0; kk < c.bk; kk++) kloop += body(`${kk}u`) + "\n    ";
  } else kloop = `for (var kk = 0u; kk < BK; kk++) ${body("kk")}`;
  const store: string[] = [];
  const decl: string[] = [];
  for (let i = 0; i < c.rg * 4 * c.cg; i++) decl.push(`var acc${i} = vec4<f32>(0.0);`);
  for (let g = 0; g < c.rg; g++) {
    for (let e = 0; e < 4; e++) {
      for (let h = 0; h < c.cg; h++) {
        store.push(
          `store4(m0 + (lid.y + ${g}u * WG_Y) * 4u + ${e}u, n0 + (lid.x + ${h}u * WG_X) * 4u, ${
            acc(g, e, h)
          });`,
        );
      }
    }
  }
  const fetch = (k0: string) => {
    const s: string[] = [];
    if (c.vecLoad) {
      for (let l = 0; l < la; l++) s.push(`pa${l} = fetch_a4(m0, ${k0}, tid + ${l}u * NT);`);
      for (let l = 0; l < lb; l++) s.push(`pb${l} = fetch_b4(n0, ${k0}, tid + ${l}u * NT);`);
      return s.join("\n      ");
    }
    for (let l = 0; l < la; l++) s.push(`pa${l} = fetch_a(m0, ${k0}, tid + ${l}u * NT);`);
    for (let l = 0; l < lb; l++) s.push(`pb${l} = fetch_b(n0, ${k0}, tid + ${l}u * NT);`);
    return s.join("\n      ");
  };
  const put = (base: string) => {
    const s: string[] = [];
    if (c.vecLoad) {
      for (let l = 0; l < la; l++) s.push(`put4a(${base}AS_SIZE, tid + ${l}u * NT, pa${l});`);
      for (let l = 0; l < lb; l++) s.push(`put4b(${base}BS_SIZE, tid + ${l}u * NT, pb${l});`);
      return s.join("\n      ");
    }
    for (let l = 0; l < la; l++) {
      s.push(
        `{ let g = slot(tid + ${l}u * NT, BM / 4u, !TRANS_A); As[${base}AS_SIZE + g.y * AS_STRIDE + g.x] = pa${l}; }`,
      );
    }
    for (let l = 0; l < lb; l++) {
      s.push(
        `{ let g = slot(tid + ${l}u * NT, BN / 4u, TRANS_B); Bs[${base}BS_SIZE + g.y * BS_STRIDE + g.x] = pb${l}; }`,
      );
    }
    return s.join("\n      ");
  };
  const pdecl: string[] = [];
  for (let l = 0; l < la; l++) pdecl.push(`var pa${l} = vec4<f32>(0.0);`);
  for (let l = 0; l < lb; l++) pdecl.push(`var pb${l} = vec4<f32>(0.0);`);
  L.push(`
const WG_X: u32 = ${c.wgX}u;
const WG_Y: u32 = ${c.wgY}u;
const BK: u32 = ${c.bk}u;
const TRANS_A: bool = ${c.transA};
const TRANS_B: bool = ${c.transB};
const NT: u32 = WG_X * WG_Y;
const BM: u32 = WG_Y * ${4 * c.rg}u;
const BN: u32 = WG_X * ${4 * c.cg}u;
const AS_STRIDE: u32 = BM / 4u + 1u;
const BS_STRIDE: u32 = BN / 4u + 1u;
const AS_SIZE: u32 = BK * AS_STRIDE;
const BS_SIZE: u32 = BK * BS_STRIDE;
struct Params { m: u32, n: u32, k: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
var<workgroup> As: array<vec4<f32>, 2u * AS_SIZE>;
var<workgroup> Bs: array<vec4<f32>, 2u * BS_SIZE>;
fn load_a(i: u32, kk: u32) -> f32 {
  let ok = i < p.m && kk < p.k;
  var idx = i * p.k + kk;
  if (TRANS_A) { idx = kk * p.m + i; }
  return select(0.0, a[select(0u, idx, ok)], ok);
}
fn load_b(kk: u32, j: u32) -> f32 {
  let ok = j < p.n && kk < p.k;
  var idx = kk * p.n + j;
  if (TRANS_B) { idx = j * p.k + kk; }
  return select(0.0, b[select(0u, idx, ok)], ok);
}
fn slot(s: u32, groups: u32, along_k: bool) -> vec2<u32> {
  if (along_k) { return vec2<u32>(s / BK, s % BK); }
  return vec2<u32>(s % groups, s / groups);
}
fn fetch_a(m0: u32, k0: u32, s: u32) -> vec4<f32> {
  let g = slot(s, BM / 4u, !TRANS_A);
  let i = m0 + g.x * 4u;
  let kk = k0 + g.y;
  return vec4<f32>(load_a(i, kk), load_a(i + 1u, kk), load_a(i + 2u, kk), load_a(i + 3u, kk));
}
fn fetch_b(n0: u32, k0: u32, s: u32) -> vec4<f32> {
  let g = slot(s, BN / 4u, TRANS_B);
  let j = n0 + g.x * 4u;
  let kk = k0 + g.y;
  return vec4<f32>(load_b(kk, j), load_b(kk, j + 1u), load_b(kk, j + 2u), load_b(kk, j + 3u));
}
${
    c.vecLoad
      ? `@group(0) @binding(4) var<storage, read> a4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> b4: array<vec4<f32>>;
const KC: u32 = BK / 4u; // vec4s of k per tile row
${vecOperand("a", "m", "As", "AS_STRIDE")}
${vecOperand("b", "n", "Bs", "BS_STRIDE")}`
      : ""
  }
fn store4(i: u32, j: u32, v: vec4<f32>) {
  if (i >= p.m) { return; }
  let row = i * p.n;
  if (j < p.n) { c[row + j] = v.x; }
  if (j + 1u < p.n) { c[row + j + 1u] = v.y; }
  if (j + 2u < p.n) { c[row + j + 2u] = v.z; }
  if (j + 3u < p.n) { c[row + j + 3u] = v.w; }
}
${
    c.arrayRet
      ? `fn block(wid: vec3<u32>, lid: vec3<u32>) -> array<vec4<f32>, ${decl.length}> {`
      : `@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {`
  }
  let tid = lid.y * WG_X + lid.x;
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  ${decl.join("\n  ")}
  ${pdecl.join("\n  ")}
  let tiles = (p.k + BK - 1u) / BK;
  ${fetch("0u")}
  ${put("0u * ")}
  workgroupBarrier();
  for (var t = 0u; t < tiles; t++) {
    let cur = t % 2u;
    let more = t + 1u < tiles;
    ${
    c.noLoads ? "" : `if (more) {
      let k0 = (t + 1u) * BK;
      ${fetch("k0")}
    }`
  }
    let ao = cur * AS_SIZE + lid.y;
    let bo = cur * BS_SIZE + lid.x;
    ${kloop}
    ${
    c.noLoads ? "" : `if (more) {
      let nxt = 1u - cur;
      ${put("nxt * ")}
    }`
  }
    ${c.noBarrier ? "" : "workgroupBarrier();"}
  }
  ${
    c.arrayRet
      ? `return array<vec4<f32>, ${decl.length}>(${decl.map((_, i) => `acc${i}`).join(", ")});
}
@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  let acc = block(wid, lid);
  ${store.map((l) => l.replace(/acc(\d+)\);$/, "acc[$1]);")).join("\n  ")}`
      : store.join("\n  ")
  }
}
`);
  return L.join("\n");
}

const args = new Map(Deno.args.map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const reps = Number(args.get("reps") ?? 10);
const shapes = (args.get("shapes") ?? "4096x4096x4096,6144x4864x896,6144x896x4864,4864x896x6144")
  .split(",").map((s) => s.split("x").map(Number));
const g = await initGpu();

const T = { transA: false, transB: true };
const cfgs: Record<string, Cfg> = {
  r2c2_bk8: { rg: 2, cg: 2, wgX: 16, wgY: 16, bk: 8, ...T },
  r2c2_bk8_u: { rg: 2, cg: 2, wgX: 16, wgY: 16, bk: 8, ...T, unrollK: true },
  r2c2_bk8_u_arr: { rg: 2, cg: 2, wgX: 16, wgY: 16, bk: 8, ...T, unrollK: true, arrayRet: true },
  r2c2_bk8_u_noload: { rg: 2, cg: 2, wgX: 16, wgY: 16, bk: 8, ...T, unrollK: true, noLoads: true },
  r2c2_bk8_u_nobar: { rg: 2, cg: 2, wgX: 16, wgY: 16, bk: 8, ...T, unrollK: true, noBarrier: true },
  r2c2_bk8_u_bare: {
    rg: 2,
    cg: 2,
    wgX: 16,
    wgY: 16,
    bk: 8,
    ...T,
    unrollK: true,
    noLoads: true,
    noBarrier: true,
  },
  r2c2_bk8_vec: { rg: 2, cg: 2, wgX: 16, wgY: 16, bk: 8, ...T, unrollK: true, vecLoad: true },
  r2c2_bk16_vec: { rg: 2, cg: 2, wgX: 16, wgY: 16, bk: 16, ...T, unrollK: true, vecLoad: true },
  r2c2_bk8_ahead: { rg: 2, cg: 2, wgX: 16, wgY: 16, bk: 8, ...T, ahead: true },
  r2c2_bk16: { rg: 2, cg: 2, wgX: 16, wgY: 16, bk: 16, ...T },
  r2c2_bk16_u: { rg: 2, cg: 2, wgX: 16, wgY: 16, bk: 16, ...T, unrollK: true },
  r2c4_bk8_u: { rg: 2, cg: 4, wgX: 16, wgY: 16, bk: 8, ...T, unrollK: true },
  r4c2_bk8_u: { rg: 4, cg: 2, wgX: 16, wgY: 16, bk: 8, ...T, unrollK: true },
  r2c2_8x16_bk16_u: { rg: 2, cg: 2, wgX: 8, wgY: 16, bk: 16, ...T, unrollK: true },
  r2c2_16x8_bk16_u: { rg: 2, cg: 2, wgX: 16, wgY: 8, bk: 16, ...T, unrollK: true },
};
const only = args.get("cfgs")?.split(",");
const layouts = (args.get("layouts") ?? "NT").split(","); // NT: x W^T, NN: g W, TN: g^T x

for (const [M, N, K] of shapes) {
  for (const lay of layouts) {
    const transA = lay[0] === "T", transB = lay[1] === "T";
    const A = randomData(M * K, 1), B = randomData(N * K, 2);
    const ta = Tensor.from(A, transA ? [K, M] : [M, K], "f32", "a");
    const tb = Tensor.from(B, transB ? [N, K] : [K, N], "f32", "b");
    const flops = 2 * M * N * K;
    // baseline: matmul.wgsl large tile, no split
    const base = () => matmulTiled(ta, tb, { transA, transB, tile: "large" });
    for (let i = 0; i < 3; i++) base().dispose();
    await g.sync();
    const ref = base();
    const refC = await readF32(ref.buffer, M * N);
    ref.dispose();
    // baseline timing via recorder timestamps
    {
      g.flush();
      const t0 = performance.now();
      const outs = [] as Tensor[];
      for (let r = 0; r < reps; r++) outs.push(base());
      await g.sync();
      const wall = (performance.now() - t0) / reps;
      outs.forEach((o) => o.dispose());
      const ms = await bestProfiledMs(() => base().dispose(), reps);
      console.log(
        JSON.stringify({
          shape: `${M}x${N}x${K}`,
          lay,
          cfg: "large(matmul.wgsl)",
          ms,
          wall,
          tflops: flops / ms / 1e9,
        }),
      );
    }
    const { out: cbuf, params: pbuf } = gemmBuffers(M, N, K);
    for (const [name, c0] of Object.entries(cfgs)) {
      if (only && !only.includes(name)) continue;
      const c = { ...c0, transA, transB };
      if (c.vecLoad && (transA || !transB || K % 4 !== 0)) continue; // along-k operands only
      const bm = c.wgY * 4 * c.rg, bn = c.wgX * 4 * c.cg;
      const nt = c.wgX * c.wgY;
      if (
        (bm * c.bk / 4) % nt !== 0 || (bn * c.bk / 4) % nt !== 0 || bm * c.bk / 4 < nt ||
        bn * c.bk / 4 < nt
      ) continue;
      // The vec4 variant reads its operands through bindings 4 and 5 alone.
      const bindings: [number, GPUBuffer][] = [
        [0, pbuf],
        [3, cbuf],
        [c.vecLoad ? 4 : 1, ta.buffer],
        [c.vecLoad ? 5 : 2, tb.buffer],
      ];
      let run: (pass: GPUComputePassEncoder) => void;
      try {
        run = rawDispatch(gen(c), bindings, [Math.ceil(N / bn), Math.ceil(M / bm)]);
      } catch (e) {
        console.log(JSON.stringify({ cfg: name, error: String(e) }));
        continue;
      }
      const ms = await bestRawMs(run, reps);
      const C = await readF32(cbuf, M * N);
      let err = 0, mag = 0;
      for (let i = 0; i < M * N; i += 997) {
        err = Math.max(err, Math.abs(C[i] - refC[i]));
        mag = Math.max(mag, Math.abs(refC[i]));
      }
      console.log(
        JSON.stringify({
          shape: `${M}x${N}x${K}`,
          lay,
          cfg: name,
          bm,
          bn,
          ms,
          tflops: flops / ms / 1e9,
          err: err / mag,
        }),
      );
    }
    cbuf.destroy();
    pbuf.destroy();
    ta.dispose();
    tb.dispose();
  }
}
