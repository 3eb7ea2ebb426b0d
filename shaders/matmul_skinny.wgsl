// Skinny GEMM for linear layers over few rows (decoding): y[M, N] = x[M, K] @ W[N, K]^T (+ bias).
// With M small the tiled kernel's square blocks leave most of the GPU idle and its K step of 8
// reads W in short pieces. Here a workgroup owns BN rows of W and BM rows of x (all of M when
// decoding) over one range of K: a split of K when N alone yields too few workgroups, with the
// partial sums reduced by matmul_splitk.wgsl.
// Both operands are contiguous along K, so tiles are read as vec4 along K (K % 4 == 0, checked
// on the TS side) and kept in workgroup memory in the same [row][k] layout, which needs no
// transposing stores. A thread owns TM rows of x and TN rows of W, strided by WG_Y and WG_X:
// per vec4 step it does TM + TN shared loads and 4 TM TN multiply-adds (`mac`). Rows of the
// shared tiles are padded by one vec4 so the WG_X threads of a warp that read different rows of
// W at the same k hit distinct banks. The next stage's global loads are held in registers while
// the current one is used (two shared buffers, one barrier per stage).
// Out-of-range rows and K load as 0 and are never stored, so any M, N and K % 4 == 0 is correct.
// Register tiles use constant indices only (TN = 4 or 8, TM = 1 or 4, unrolled by hand): a
// register array indexed in a loop ends up in slow local memory on this toolchain.
// W (and x) may be f16 under shader-f16; tiles and accumulation stay f32.
// The *_resid entries add a residual [M, N] (its own read-only binding) after the bias:
// y = (x @ W^T + bias) + resid, bit-for-bit the unfused add(resid, linear(...)).

#const WG_X: u32 // threads along N
#const WG_Y: u32 // threads along M
#const TN: u32 // rows of W per thread: 4 or 8
#const TM: u32 // rows of x per thread: 1 or 4
#const BK: u32 // K per stage: 4, 8, 12 or 16 (written out per stage)

#include "skinny_tile.wgsl"
#include "skinny_store.wgsl"

alias X4 = vec4<f32>;
alias W4 = vec4<f32>;
alias BIAS_T = f32;

const BN: u32 = WG_X * TN;
alias W_SEL = u32; // the first weight row
alias W_SLOT = vec4<f32>;

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
@group(0) @binding(5) var<storage, read> resid: array<f32>;

var<workgroup> ws: WTile;

fn fetch_w(n0: u32, kb: u32, kend: u32, s: u32) -> vec4<f32> {
  let j = n0 + s / K4;
  let kk = kb + s % K4;
  let ok = s < BN * K4 && j < p.n && kk < kend;
  return select(vec4<f32>(0.0), vec4<f32>(w[select(0u, j * p.k4 + kk, ok)]), ok);
}

fn put_w(buf: u32, s: u32, v: vec4<f32>) {
  let r = s / K4;
  if (s < BN * K4) { ws[buf][r / WG_X][r % WG_X][s % K4] = v; }
}

// This thread's TM x TN partial sums over the workgroup's K range: acc[i] holds row
// m0 + ty + i * WG_Y at columns n0 + tx + (0..3) * WG_X, acc[4 + i] the columns (4..7) * WG_X.
fn block(wid: vec3<u32>, lid: vec3<u32>) -> array<vec4<f32>, 8> {
  let tid = lid.y * WG_X + lid.x;
  let n0 = wid.x * BN;
  let m0 = wid.y * BM;
  let kb0 = wid.z * p.split_k4;
  let kend = min(p.k4, kb0 + p.split_k4);
  let stages = (kend - kb0 + K4 - 1u) / K4;
#unroll i 8
  var acc$i = vec4<f32>(0.0);
#end
  var staged = fetch(m0, n0, kb0, kend, tid);
  put(0u, tid, staged);
  workgroupBarrier();
  for (var t = 0u; t < stages; t++) {
    let cur = t % 2u;
    let more = t + 1u < stages;
    if (more) { staged = fetch(m0, n0, kb0 + (t + 1u) * K4, kend, tid); }
    // The stage's K4 vec4s of K, written out (skinny_tile.wgsl), into named sums.
    {
#unroll c 4
      if ($c < K4) {
        let x0 = xs[cur][0][lid.y][$c % K4];
        var x1 = vec4<f32>(0.0);
        var x2 = vec4<f32>(0.0);
        var x3 = vec4<f32>(0.0);
        if (TM > 1u) {
          x1 = xs[cur][1u % TM][lid.y][$c % K4];
          x2 = xs[cur][2u % TM][lid.y][$c % K4];
          x3 = xs[cur][3u % TM][lid.y][$c % K4];
        }
        let w0 = ws[cur][0][lid.x][$c % K4];
        let w1 = ws[cur][1][lid.x][$c % K4];
        let w2 = ws[cur][2][lid.x][$c % K4];
        let w3 = ws[cur][3][lid.x][$c % K4];
        acc0 = mac(acc0, x0, w0, w1, w2, w3);
        if (TM > 1u) {
          acc1 = mac(acc1, x1, w0, w1, w2, w3);
          acc2 = mac(acc2, x2, w0, w1, w2, w3);
          acc3 = mac(acc3, x3, w0, w1, w2, w3);
        }
        if (TN > 4u) {
          let w4 = ws[cur][4u % WJ][lid.x][$c % K4];
          let w5 = ws[cur][5u % WJ][lid.x][$c % K4];
          let w6 = ws[cur][6u % WJ][lid.x][$c % K4];
          let w7 = ws[cur][7u % WJ][lid.x][$c % K4];
          acc4 = mac(acc4, x0, w4, w5, w6, w7);
          if (TM > 1u) {
            acc5 = mac(acc5, x1, w4, w5, w6, w7);
            acc6 = mac(acc6, x2, w4, w5, w6, w7);
            acc7 = mac(acc7, x3, w4, w5, w6, w7);
          }
        }
      }
#end
    }
    if (more) { put(1u - cur, tid, staged); }
    workgroupBarrier();
  }
  return array<vec4<f32>, 8>(acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7);
}

// Row m of the output at columns n, n + WG_X, n + 2 WG_X, n + 3 WG_X.
fn store4(at: u32, m: u32, n: u32, v: vec4<f32>) {
  if (m >= p.m) { return; }
  store_cols(at + m * p.n, n, v);
}

// b0, b1: the bias at this thread's columns 0..3 and 4..7 (zero without bias).
fn store(wid: vec3<u32>, lid: vec3<u32>, acc: array<vec4<f32>, 8>, at: u32, b0: vec4<f32>,
         b1: vec4<f32>) {
  let m = wid.y * BM + lid.y;
  let n = wid.x * BN + lid.x;
  store4(at, m, n, acc[0] + b0);
  if (TM > 1u) {
    store4(at, m + WG_Y, n, acc[1] + b0);
    store4(at, m + 2u * WG_Y, n, acc[2] + b0);
    store4(at, m + 3u * WG_Y, n, acc[3] + b0);
  }
  if (TN > 4u) {
    let n4 = n + 4u * WG_X;
    store4(at, m, n4, acc[4] + b1);
    if (TM > 1u) {
      store4(at, m + WG_Y, n4, acc[5] + b1);
      store4(at, m + 2u * WG_Y, n4, acc[6] + b1);
      store4(at, m + 3u * WG_Y, n4, acc[7] + b1);
    }
  }
}

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  store(wid, lid, block(wid, lid), wid.z * p.stride_out, vec4<f32>(0.0), vec4<f32>(0.0));
}

// The bias at columns n, n + WG_X, n + 2 WG_X, n + 3 WG_X (clamped reads, unused past N).
fn bias4(n: u32) -> vec4<f32> {
  let last = p.n - 1u;
  return vec4<f32>(f32(bias[min(n, last)]), f32(bias[min(n + WG_X, last)]),
                   f32(bias[min(n + 2u * WG_X, last)]), f32(bias[min(n + 3u * WG_X, last)]));
}

// One split only: the bias is added here. Only this entry reads `bias`: `main` must not touch
// it, or its auto layout would require the binding.
@compute @workgroup_size(WG_X, WG_Y)
fn main_bias(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let n = wid.x * BN + lid.x;
  store(wid, lid, block(wid, lid), 0u, bias4(n), bias4(n + 4u * WG_X));
}

// The residual at row m, columns n, n + WG_X, n + 2 WG_X, n + 3 WG_X (0 past M or N).
fn resid4(m: u32, n: u32) -> vec4<f32> {
  let row = min(m, p.m - 1u) * p.n;
  let last = p.n - 1u;
  return select(vec4<f32>(0.0),
                vec4<f32>(resid[row + min(n, last)], resid[row + min(n + WG_X, last)],
                          resid[row + min(n + 2u * WG_X, last)],
                          resid[row + min(n + 3u * WG_X, last)]),
                vec4<bool>(n < p.n, n + WG_X < p.n, n + 2u * WG_X < p.n, n + 3u * WG_X < p.n));
}

// (acc + bias) + resid at this thread's outputs, laid out as `store` reads acc.
fn plus_resid(wid: vec3<u32>, lid: vec3<u32>, acc: array<vec4<f32>, 8>, b0: vec4<f32>,
              b1: vec4<f32>) -> array<vec4<f32>, 8> {
  let m = wid.y * BM + lid.y;
  let n = wid.x * BN + lid.x;
  let n4 = n + 4u * WG_X;
  var o = acc;
  o[0] = (o[0] + b0) + resid4(m, n);
  if (TM > 1u) {
    o[1] = (o[1] + b0) + resid4(m + WG_Y, n);
    o[2] = (o[2] + b0) + resid4(m + 2u * WG_Y, n);
    o[3] = (o[3] + b0) + resid4(m + 3u * WG_Y, n);
  }
  if (TN > 4u) {
    o[4] = (o[4] + b1) + resid4(m, n4);
    if (TM > 1u) {
      o[5] = (o[5] + b1) + resid4(m + WG_Y, n4);
      o[6] = (o[6] + b1) + resid4(m + 2u * WG_Y, n4);
      o[7] = (o[7] + b1) + resid4(m + 3u * WG_Y, n4);
    }
  }
  return o;
}

// One split only, plus the residual (binding 4 unbound).
@compute @workgroup_size(WG_X, WG_Y)
fn main_resid(@builtin(workgroup_id) wid: vec3<u32>,
              @builtin(local_invocation_id) lid: vec3<u32>) {
  let zero = vec4<f32>(0.0);
  store(wid, lid, plus_resid(wid, lid, block(wid, lid), zero, zero), 0u, zero, zero);
}

// One split only: (x @ W^T + bias) + resid.
@compute @workgroup_size(WG_X, WG_Y)
fn main_bias_resid(@builtin(workgroup_id) wid: vec3<u32>,
                   @builtin(local_invocation_id) lid: vec3<u32>) {
  let n = wid.x * BN + lid.x;
  let zero = vec4<f32>(0.0);
  let o = plus_resid(wid, lid, block(wid, lid), bias4(n), bias4(n + 4u * WG_X));
  store(wid, lid, o, 0u, zero, zero);
}
