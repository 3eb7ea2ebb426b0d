// The q, k and v projections of attention over few rows (decoding), in one dispatch:
// q[M, Nq] = x @ Wq^T + bq, k[M, Nk] = x @ Wk^T + bk, v[M, Nv] = x @ Wv^T + bv, x [M, K], W* [N*, K].
// The layout follows matmul_skinny_swiglu.wgsl: a workgroup owns BN rows of one weight and BM rows
// of x, tiles are read as vec4 along K (K % 4 == 0, checked on the TS side) into workgroup memory
// in [row][k] layout with rows padded by one vec4, and the next stage's loads wait in registers
// while the current stage is used. The grid's x axis is the column blocks of q, then those of k,
// then those of v (each padded to whole blocks): a workgroup reads its block index to pick its
// matrix, so every branch on the matrix is uniform across the workgroup. A thread owns TM rows of
// x (strided by WG_Y) and 4 rows of the weight (strided by WG_X). Out-of-range rows and K load as
// 0 and are never stored. W may be f16 under shader-f16; tiles and accumulation stay f32. No
// gradient: training keeps three linears, whose backward exists.
// Split-K (`main_split`): workgroup z sums the K slice [z * k_split4, (z + 1) * k_split4) (in
// vec4s) and writes its partial of all three outputs, side by side, into `yq` bound as the
// partial buffer [splits, M, Nq + Nk + Nv]; qkv_split_sum.wgsl adds the splits and the biases.
// Few blocks (one row, a narrow model) then still fill the GPU.

#const WG_X: u32 // threads along N
#const WG_Y: u32 // threads along M
#const TM: u32 // rows of x per thread: 1 or 4
#const BK: u32 // K per stage: 4, 8, 12 or 16 (written out per stage)

#include "skinny_tile.wgsl"

alias X4 = vec4<f32>;
alias W4 = vec4<f32>;
alias BIAS_T = f32;

const BN: u32 = WG_X * 4u;
alias W_SEL = Block;
alias W_SLOT = vec4<f32>;

struct Params {
  m: u32,
  k4: u32, // K / 4: the row length of x and W in vec4s
  nq: u32,
  nk: u32,
  nv: u32,
  gq: u32, // column blocks of q: ceil(nq / BN)
  gk: u32, // column blocks of k
  k_split4: u32, // K per split in vec4s (>= k4: one split)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<X4>;
@group(0) @binding(2) var<storage, read> wq: array<W4>;
@group(0) @binding(3) var<storage, read> wk: array<W4>;
@group(0) @binding(4) var<storage, read> wv: array<W4>;
@group(0) @binding(5) var<storage, read_write> yq: array<f32>;
@group(0) @binding(6) var<storage, read_write> yk: array<f32>;
@group(0) @binding(7) var<storage, read_write> yv: array<f32>;
@group(0) @binding(8) var<storage, read> bias_q: array<BIAS_T>;
@group(0) @binding(9) var<storage, read> bias_k: array<BIAS_T>;
@group(0) @binding(10) var<storage, read> bias_v: array<BIAS_T>;

var<workgroup> ws: WTile;

// This workgroup's matrix (0 q, 1 k, 2 v), its row count and its first weight row.
struct Block {
  which: u32,
  n: u32,
  n0: u32,
}

fn pick(wx: u32) -> Block {
  if (wx < p.gq) { return Block(0u, p.nq, wx * BN); }
  if (wx < p.gq + p.gk) { return Block(1u, p.nk, (wx - p.gq) * BN); }
  return Block(2u, p.nv, (wx - p.gq - p.gk) * BN);
}

fn fetch_w(b: Block, kb: u32, kend: u32, s: u32) -> vec4<f32> {
  let j = b.n0 + s / K4;
  let kk = kb + s % K4;
  let ok = s < BN * K4 && j < b.n && kk < kend;
  let at = select(0u, j * p.k4 + kk, ok);
  var w: vec4<f32>;
  if (b.which == 0u) {
    w = vec4<f32>(wq[at]);
  } else if (b.which == 1u) {
    w = vec4<f32>(wk[at]);
  } else {
    w = vec4<f32>(wv[at]);
  }
  return select(vec4<f32>(0.0), w, ok);
}

fn put_w(buf: u32, s: u32, v: vec4<f32>) {
  let r = s / K4;
  if (s < BN * K4) { ws[buf][r / WG_X][r % WG_X][s % K4] = v; }
}

// This thread's sums over all of K: acc[i] holds row m0 + ty + i * WG_Y at weight rows
// n0 + tx + (0..3) * WG_X.
fn block(b: Block, wid: vec3<u32>, lid: vec3<u32>) -> array<vec4<f32>, 4> {
  let tid = lid.y * WG_X + lid.x;
  let m0 = wid.y * BM;
  let k_lo = min(p.k4, wid.z * p.k_split4);
  let k_hi = min(p.k4, k_lo + p.k_split4);
  let stages = (k_hi - k_lo + K4 - 1u) / K4;
#unroll i 4
  var acc$i = vec4<f32>(0.0);
#end
  var staged = fetch(m0, b, k_lo, k_hi, tid);
  put(0u, tid, staged);
  workgroupBarrier();
  for (var t = 0u; t < stages; t++) {
    let cur = t % 2u;
    let more = t + 1u < stages;
    if (more) { staged = fetch(m0, b, k_lo + (t + 1u) * K4, k_hi, tid); }
    // The stage's K4 vec4s of K, written out (skinny_tile.wgsl), into named sums.
    {
#unroll c 4
      if ($c < K4) {
        let w0 = ws[cur][0][lid.x][$c % K4];
        let w1 = ws[cur][1][lid.x][$c % K4];
        let w2 = ws[cur][2][lid.x][$c % K4];
        let w3 = ws[cur][3][lid.x][$c % K4];
        acc0 = mac(acc0, xs[cur][0][lid.y][$c % K4], w0, w1, w2, w3);
        if (TM > 1u) {
          acc1 = mac(acc1, xs[cur][1u % TM][lid.y][$c % K4], w0, w1, w2, w3);
          acc2 = mac(acc2, xs[cur][2u % TM][lid.y][$c % K4], w0, w1, w2, w3);
          acc3 = mac(acc3, xs[cur][3u % TM][lid.y][$c % K4], w0, w1, w2, w3);
        }
      }
#end
    }
    if (more) { put(1u - cur, tid, staged); }
    workgroupBarrier();
  }
  return array<vec4<f32>, 4>(acc0, acc1, acc2, acc3);
}

fn put_y(which: u32, at: u32, v: f32) {
  if (which == 0u) {
    yq[at] = v;
  } else if (which == 1u) {
    yk[at] = v;
  } else {
    yv[at] = v;
  }
}

// Row m at columns n + (0..3) * WG_X of this workgroup's output.
fn store4(b: Block, m: u32, n: u32, v: vec4<f32>) {
  if (m >= p.m) { return; }
  let row = m * b.n;
  for (var i = 0u; i < 4u; i++) {
    if (n + i * WG_X < b.n) { put_y(b.which, row + n + i * WG_X, v[i]); }
  }
}

// bias: the bias at this thread's four columns (zero without bias).
fn store(b: Block, wid: vec3<u32>, lid: vec3<u32>, acc: array<vec4<f32>, 4>, bias: vec4<f32>) {
  let m = wid.y * BM + lid.y;
  let n = b.n0 + lid.x;
  store4(b, m, n, acc[0] + bias);
  if (TM > 1u) {
    store4(b, m + WG_Y, n, acc[1] + bias);
    store4(b, m + 2u * WG_Y, n, acc[2] + bias);
    store4(b, m + 3u * WG_Y, n, acc[3] + bias);
  }
}

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let b = pick(wid.x);
  store(b, wid, lid, block(b, wid, lid), vec4<f32>(0.0));
}

// The bias at columns n + (0..3) * WG_X of this workgroup's matrix (clamped reads, unused past N).
fn biases(b: Block, n: u32) -> vec4<f32> {
  let last = b.n - 1u;
  var r: vec4<f32>;
  for (var i = 0u; i < 4u; i++) {
    let j = min(n + i * WG_X, last);
    if (b.which == 0u) {
      r[i] = f32(bias_q[j]);
    } else if (b.which == 1u) {
      r[i] = f32(bias_k[j]);
    } else {
      r[i] = f32(bias_v[j]);
    }
  }
  return r;
}

// All three biases: ten storage buffers in all (the TS side checks the device limit first).
// Only this entry reads them: `main`'s auto layout must not require the bindings.
@compute @workgroup_size(WG_X, WG_Y)
fn main_bias(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let b = pick(wid.x);
  store(b, wid, lid, block(b, wid, lid), biases(b, b.n0 + lid.x));
}

// Row m at columns n + (0..3) * WG_X of this workgroup's matrix, into split z's partial.
fn store4_part(b: Block, z: u32, m: u32, n: u32, v: vec4<f32>) {
  if (m >= p.m) { return; }
  let width = p.nq + p.nk + p.nv;
  let first = select(select(p.nq + p.nk, p.nq, b.which == 1u), 0u, b.which == 0u);
  let row = (z * p.m + m) * width + first;
  for (var i = 0u; i < 4u; i++) {
    if (n + i * WG_X < b.n) { yq[row + n + i * WG_X] = v[i]; }
  }
}

// One K slice's partial sums (no bias): `yq` is the partial buffer here.
@compute @workgroup_size(WG_X, WG_Y)
fn main_split(@builtin(workgroup_id) wid: vec3<u32>,
              @builtin(local_invocation_id) lid: vec3<u32>) {
  let b = pick(wid.x);
  let acc = block(b, wid, lid);
  let m = wid.y * BM + lid.y;
  let n = b.n0 + lid.x;
  store4_part(b, wid.z, m, n, acc[0]);
  if (TM > 1u) {
    store4_part(b, wid.z, m + WG_Y, n, acc[1]);
    store4_part(b, wid.z, m + 2u * WG_Y, n, acc[2]);
    store4_part(b, wid.z, m + 3u * WG_Y, n, acc[3]);
  }
}
