// Skinny GEMM for linear layers over few rows (decoding): y[M, N] = x[M, K] @ W[N, K]^T (+ bias).
// With M small the tiled kernel's square blocks leave most of the GPU idle and its K step of 8
// reads W in short pieces. Here a workgroup owns BN rows of W and BM rows of x (all of M when
// decoding) over one range of K: a split of K when N alone yields too few workgroups, with the
// partial sums reduced by matmul_splitk.wgsl.
// Both operands are contiguous along K, so tiles are read as vec4 along K (K % 4 == 0, checked
// on the TS side) and kept in workgroup memory in the same [row][k] layout, which needs no
// transposing stores. A thread owns TM rows of x and TN rows of W, strided by WG_Y and WG_X:
// per vec4 step it does TM + TN shared loads and TM * TN four-wide dot products. Rows of the
// shared tiles are padded by one vec4 so the WG_X threads of a warp that read different rows of
// W at the same k hit distinct banks. The next stage's global loads are held in registers while
// the current one is used (two shared buffers, one barrier per stage).
// Out-of-range rows and K load as 0 and are never stored, so any M, N and K % 4 == 0 is correct.
// W (and x) may be f16 under shader-f16; tiles and accumulation stay f32.

const WG_X: u32 = 16u; // threads along N
const WG_Y: u32 = 16u; // threads along M
const TN: u32 = 8u; // rows of W per thread
const TM: u32 = 4u; // rows of x per thread
const BK: u32 = 16u; // K per stage (a multiple of 4)
alias X4 = vec4<f32>;
alias W4 = vec4<f32>;
alias BIAS_T = f32;

const NT: u32 = WG_X * WG_Y;
const BN: u32 = WG_X * TN;
const BM: u32 = WG_Y * TM;
const K4: u32 = BK / 4u; // vec4s per tile row
const RS: u32 = K4 + 1u; // padded tile row stride, in vec4s
const XS_SIZE: u32 = BM * RS;
const WS_SIZE: u32 = BN * RS;
const LX: u32 = (BM * K4 + NT - 1u) / NT; // x tile slots per thread
const LW: u32 = (BN * K4 + NT - 1u) / NT;

struct Params {
  m: u32,
  n: u32,
  k4: u32, // K / 4: the row length of x and W in vec4s
  split_k4: u32, // vec4s of K per split (a multiple of K4)
  stride_out: u32, // elements between the outputs of two splits (M * N; 0 for one split)
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<X4>;
@group(0) @binding(2) var<storage, read> w: array<W4>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<BIAS_T>;

var<workgroup> xs: array<vec4<f32>, 2u * XS_SIZE>;
var<workgroup> ws: array<vec4<f32>, 2u * WS_SIZE>;

// Slot s of a tile of `rows` rows: consecutive slots walk along K, so K4 threads read one
// row's contiguous 16 * K4 bytes. Rows past the matrix, K past the split and slots past the
// tile read as zero (from a clamped index, branch-free).
fn fetch_x(m0: u32, kb: u32, kend: u32, s: u32) -> vec4<f32> {
  let i = m0 + s / K4;
  let kk = kb + s % K4;
  let ok = s < BM * K4 && i < p.m && kk < kend;
  return select(vec4<f32>(0.0), vec4<f32>(x[select(0u, i * p.k4 + kk, ok)]), ok);
}

fn fetch_w(n0: u32, kb: u32, kend: u32, s: u32) -> vec4<f32> {
  let j = n0 + s / K4;
  let kk = kb + s % K4;
  let ok = s < BN * K4 && j < p.n && kk < kend;
  return select(vec4<f32>(0.0), vec4<f32>(w[select(0u, j * p.k4 + kk, ok)]), ok);
}

fn put(buf: u32, tid: u32, px: array<vec4<f32>, LX>, pw: array<vec4<f32>, LW>) {
  for (var l = 0u; l < LX; l++) {
    let s = tid + l * NT;
    if (s < BM * K4) { xs[buf * XS_SIZE + (s / K4) * RS + s % K4] = px[l]; }
  }
  for (var l = 0u; l < LW; l++) {
    let s = tid + l * NT;
    if (s < BN * K4) { ws[buf * WS_SIZE + (s / K4) * RS + s % K4] = pw[l]; }
  }
}

// This thread's TM x TN partial sums over the workgroup's K range: acc[i * TN + j] belongs to
// row m0 + ty + i * WG_Y and column n0 + tx + j * WG_X.
fn block(wid: vec3<u32>, lid: vec3<u32>) -> array<f32, TM * TN> {
  let tid = lid.y * WG_X + lid.x;
  let n0 = wid.x * BN;
  let m0 = wid.y * BM;
  let kb0 = wid.z * p.split_k4;
  let kend = min(p.k4, kb0 + p.split_k4);
  let stages = (kend - kb0 + K4 - 1u) / K4;
  var acc: array<f32, TM * TN>;
  var px: array<vec4<f32>, LX>;
  var pw: array<vec4<f32>, LW>;
  for (var l = 0u; l < LX; l++) { px[l] = fetch_x(m0, kb0, kend, tid + l * NT); }
  for (var l = 0u; l < LW; l++) { pw[l] = fetch_w(n0, kb0, kend, tid + l * NT); }
  put(0u, tid, px, pw);
  workgroupBarrier();
  for (var t = 0u; t < stages; t++) {
    let cur = t % 2u;
    let more = t + 1u < stages;
    if (more) {
      let kb = kb0 + (t + 1u) * K4;
      for (var l = 0u; l < LX; l++) { px[l] = fetch_x(m0, kb, kend, tid + l * NT); }
      for (var l = 0u; l < LW; l++) { pw[l] = fetch_w(n0, kb, kend, tid + l * NT); }
    }
    let xo = cur * XS_SIZE + lid.y * RS;
    let wo = cur * WS_SIZE + lid.x * RS;
    for (var c = 0u; c < K4; c++) {
      var xv: array<vec4<f32>, TM>;
      for (var i = 0u; i < TM; i++) { xv[i] = xs[xo + i * WG_Y * RS + c]; }
      for (var j = 0u; j < TN; j++) {
        let wv = ws[wo + j * WG_X * RS + c];
        for (var i = 0u; i < TM; i++) { acc[i * TN + j] += dot(xv[i], wv); }
      }
    }
    if (more) { put(1u - cur, tid, px, pw); }
    workgroupBarrier();
  }
  return acc;
}

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let acc = block(wid, lid);
  let base = wid.z * p.stride_out;
  for (var i = 0u; i < TM; i++) {
    let m = wid.y * BM + lid.y + i * WG_Y;
    for (var j = 0u; j < TN; j++) {
      let n = wid.x * BN + lid.x + j * WG_X;
      if (m < p.m && n < p.n) { y[base + m * p.n + n] = acc[i * TN + j]; }
    }
  }
}

// One split only: the bias is added here (`main` must not touch `bias`, or its auto layout
// would require the binding).
@compute @workgroup_size(WG_X, WG_Y)
fn main_bias(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let acc = block(wid, lid);
  for (var i = 0u; i < TM; i++) {
    let m = wid.y * BM + lid.y + i * WG_Y;
    for (var j = 0u; j < TN; j++) {
      let n = wid.x * BN + lid.x + j * WG_X;
      if (m < p.m && n < p.n) { y[m * p.n + n] = acc[i * TN + j] + f32(bias[n]); }
    }
  }
}
