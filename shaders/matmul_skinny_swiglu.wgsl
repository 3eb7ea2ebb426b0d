// The first half of a SwiGLU MLP over few rows (decoding), in one pass:
// y[M, N] = silu(x @ Wg^T + bg) * (x @ Wu^T + bu), x [M, K], Wg and Wu [N, K], silu(g) = g sigmoid(g).
// The layout follows matmul_skinny.wgsl: a workgroup owns BN rows of both weights and BM rows of x,
// tiles are read as vec4 along K (K % 4 == 0, checked on the TS side) into workgroup memory in
// [row][k] layout with rows padded by one vec4, and the next stage's loads wait in registers
// while the current stage is used. A thread owns TM rows of x (strided by WG_Y) and 4 rows of each
// weight (strided by WG_X), with one gate and one up accumulator per output; the activation is
// applied at the store. Split-K (`main_split`: silu of a partial sum is not a partial sum):
// workgroup z sums the K slice [z * k_split4, (z + 1) * k_split4) (in vec4s) and writes its gate
// and up sums into `y` bound as the partial buffer [splits, 2, M, N]; swiglu_split_sum.wgsl adds
// the splits and the biases and applies the activation. Few blocks (one row) then fill the GPU.
// Out-of-range rows and K load as 0 and are never stored. W may be f16 under shader-f16; tiles
// and accumulation stay f32. No gradient: training keeps linear + swiglu, whose backward exists.

#const WG_X: u32 // threads along N
#const WG_Y: u32 // threads along M
#const TM: u32 // rows of x per thread: 1 or 4
#const BK: u32 // K per stage: 4, 8, 12 or 16 (written out per stage)

#include "skinny_tile.wgsl"
#include "skinny_store.wgsl"
#include "sigmoid.wgsl"

alias X4 = vec4<f32>;
alias W4 = vec4<f32>;
alias BIAS_T = f32;

const BN: u32 = WG_X * 4u;
alias W_SEL = u32; // the first weight row
alias W_SLOT = array<vec4<f32>, 2>; // (gate, up)

struct Params {
  m: u32,
  n: u32,
  k4: u32, // K / 4: the row length of x and W in vec4s
  k_split4: u32, // K per split in vec4s (>= k4: one split)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<X4>;
@group(0) @binding(2) var<storage, read> wg: array<W4>;
@group(0) @binding(3) var<storage, read> wu: array<W4>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read> bias_g: array<BIAS_T>;
@group(0) @binding(6) var<storage, read> bias_u: array<BIAS_T>;

var<workgroup> gs: WTile;
var<workgroup> us: WTile;

fn fetch_w(n0: u32, kb: u32, kend: u32, s: u32) -> array<vec4<f32>, 2> {
  let j = n0 + s / K4;
  let kk = kb + s % K4;
  let ok = s < BN * K4 && j < p.n && kk < kend;
  let at = select(0u, j * p.k4 + kk, ok);
  let z = vec4<f32>(0.0);
  return array<vec4<f32>, 2>(select(z, vec4<f32>(wg[at]), ok), select(z, vec4<f32>(wu[at]), ok));
}

fn put_w(buf: u32, s: u32, v: array<vec4<f32>, 2>) {
  if (s < BN * K4) {
    let r = s / K4;
    gs[buf][r / WG_X][r % WG_X][s % K4] = v[0];
    us[buf][r / WG_X][r % WG_X][s % K4] = v[1];
  }
}

// This thread's sums over all of K: acc[i] (gate) and acc[4 + i] (up) hold row m0 + ty + i * WG_Y
// at columns n0 + tx + (0..3) * WG_X.
fn block(wid: vec3<u32>, lid: vec3<u32>) -> array<vec4<f32>, 8> {
  let tid = lid.y * WG_X + lid.x;
  let n0 = wid.x * BN;
  let m0 = wid.y * BM;
  let k_lo = min(p.k4, wid.z * p.k_split4);
  let k_hi = min(p.k4, k_lo + p.k_split4);
  let stages = (k_hi - k_lo + K4 - 1u) / K4;
#unroll i 8
  var acc$i = vec4<f32>(0.0);
#end
  var staged = fetch(m0, n0, k_lo, k_hi, tid);
  put(0u, tid, staged);
  workgroupBarrier();
  for (var t = 0u; t < stages; t++) {
    let cur = t % 2u;
    let more = t + 1u < stages;
    if (more) { staged = fetch(m0, n0, k_lo + (t + 1u) * K4, k_hi, tid); }
    // The stage's K4 vec4s of K, written out (skinny_tile.wgsl), into named sums.
    {
#unroll c 4
      if ($c < K4) {
        let x0 = xs[cur][0][lid.y][$c % K4];
        let g0 = gs[cur][0][lid.x][$c % K4];
        let g1 = gs[cur][1][lid.x][$c % K4];
        let g2 = gs[cur][2][lid.x][$c % K4];
        let g3 = gs[cur][3][lid.x][$c % K4];
        let u0 = us[cur][0][lid.x][$c % K4];
        let u1 = us[cur][1][lid.x][$c % K4];
        let u2 = us[cur][2][lid.x][$c % K4];
        let u3 = us[cur][3][lid.x][$c % K4];
        acc0 = mac(acc0, x0, g0, g1, g2, g3);
        acc4 = mac(acc4, x0, u0, u1, u2, u3);
        if (TM > 1u) {
          let x1 = xs[cur][1u % TM][lid.y][$c % K4];
          let x2 = xs[cur][2u % TM][lid.y][$c % K4];
          let x3 = xs[cur][3u % TM][lid.y][$c % K4];
          acc1 = mac(acc1, x1, g0, g1, g2, g3);
          acc2 = mac(acc2, x2, g0, g1, g2, g3);
          acc3 = mac(acc3, x3, g0, g1, g2, g3);
          acc5 = mac(acc5, x1, u0, u1, u2, u3);
          acc6 = mac(acc6, x2, u0, u1, u2, u3);
          acc7 = mac(acc7, x3, u0, u1, u2, u3);
        }
      }
#end
    }
    if (more) { put(1u - cur, tid, staged); }
    workgroupBarrier();
  }
  return array<vec4<f32>, 8>(acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7);
}

// Row m at columns n + (0..3) * WG_X: silu(g) * u.
fn store4(m: u32, n: u32, g: vec4<f32>, u: vec4<f32>) {
  if (m >= p.m) { return; }
  let v = g * sigmoid4(g) * u;
  store_cols(m * p.n, n, v);
}

// bg, bu: the biases at this thread's four columns (zero without bias).
fn store(wid: vec3<u32>, lid: vec3<u32>, acc: array<vec4<f32>, 8>, bg: vec4<f32>, bu: vec4<f32>) {
  let m = wid.y * BM + lid.y;
  let n = wid.x * BN + lid.x;
  store4(m, n, acc[0] + bg, acc[4] + bu);
  if (TM > 1u) {
    store4(m + WG_Y, n, acc[1] + bg, acc[5] + bu);
    store4(m + 2u * WG_Y, n, acc[2] + bg, acc[6] + bu);
    store4(m + 3u * WG_Y, n, acc[3] + bg, acc[7] + bu);
  }
}

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  store(wid, lid, block(wid, lid), vec4<f32>(0.0), vec4<f32>(0.0));
}

// The gate and up biases at columns n + (0..3) * WG_X (clamped reads, unused past N).
fn biases(n: u32) -> array<vec4<f32>, 2> {
  let last = p.n - 1u;
  var r: array<vec4<f32>, 2>;
  for (var i = 0u; i < 4u; i++) {
    let j = min(n + i * WG_X, last);
    r[0][i] = f32(bias_g[j]);
    r[1][i] = f32(bias_u[j]);
  }
  return r;
}

// Both biases. Only this entry reads them: `main`'s auto layout must not require the bindings.
@compute @workgroup_size(WG_X, WG_Y)
fn main_bias(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let b = biases(wid.x * BN + lid.x);
  store(wid, lid, block(wid, lid), b[0], b[1]);
}

// One K slice's gate and up sums (no bias, no activation): `y` is the partial buffer here.
@compute @workgroup_size(WG_X, WG_Y)
fn main_split(@builtin(workgroup_id) wid: vec3<u32>,
              @builtin(local_invocation_id) lid: vec3<u32>) {
  let acc = block(wid, lid);
  let m = wid.y * BM + lid.y;
  let n = wid.x * BN + lid.x;
  let gate = wid.z * 2u * p.m * p.n; // this split's gate sums; its up sums follow
  for (var r = 0u; r < TM; r++) {
    let mr = m + r * WG_Y;
    if (mr < p.m) {
      store_cols(gate + mr * p.n, n, acc[r]);
      store_cols(gate + (p.m + mr) * p.n, n, acc[4u + r]);
    }
  }
}
