// Attention backward, query side (flash-attention-2 style recompute): one workgroup owns BQ query
// rows of one (batch, kv head) as in attention_fwd, computes delta = dO . O per row (saved for the
// key-side kernel), then streams key blocks: P = exp(S - lse), dS = P * (dO V^T - delta) and
// dQ += scale * dS K. Rows that saw no key have P = 0 everywhere, hence zero gradients.

const D: u32 = 64u;
const BQ: u32 = 16u;
const BK: u32 = 16u;
const TPR: u32 = 4u;
const WG: u32 = BQ * TPR;
const NC: u32 = (D + TPR - 1u) / TPR;
const NS: u32 = BK / TPR;

struct Params {
  batch: u32,
  t: u32,
  s: u32,
  l: u32,
  hq: u32,
  hkv: u32,
  g: u32,
  off: i32,
  scale: f32,
  causal: u32,
  has_mask: u32,
  mask_stride: u32,
  rows: u32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<i32>;
@group(0) @binding(5) var<storage, read> o: array<f32>;
@group(0) @binding(6) var<storage, read> dout: array<f32>;
@group(0) @binding(7) var<storage, read> lse: array<f32>; // [B, Hq, T]
@group(0) @binding(8) var<storage, read_write> dq: array<f32>;
@group(0) @binding(9) var<storage, read_write> delta: array<f32>; // [B, Hq, T]

var<workgroup> qs: array<f32, BQ * D>;
var<workgroup> dos: array<f32, BQ * D>;
var<workgroup> ks: array<f32, BK * D>;
var<workgroup> vs: array<f32, BK * D>;
var<workgroup> ss: array<f32, BQ * BK>;
var<workgroup> red: array<f32, WG>;

fn key_ok(b: u32, s: u32) -> bool {
  if (s >= p.l) { return false; }
  return p.has_mask == 0u || mask[b * p.mask_stride + s] != 0;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let r = tid / TPR;
  let sub = tid % TPR;
  let rf0 = wid.x * BQ;
  let hk = wid.y;
  let b = wid.z;

  for (var i = tid; i < BQ * D; i += WG) {
    let rf = rf0 + i / D;
    var x = 0.0;
    var dx = 0.0;
    if (rf < p.rows) {
      let a = ((b * p.t + rf / p.g) * p.hq + hk * p.g + rf % p.g) * D + i % D;
      x = q[a];
      dx = dout[a];
    }
    qs[i] = x;
    dos[i] = dx;
  }

  let rf = rf0 + r;
  let row_ok = rf < p.rows;
  let t = rf / p.g;
  let h = hk * p.g + rf % p.g;
  let qpos = p.off + i32(t);
  let ob = ((b * p.t + t) * p.hq + h) * D;
  let li = (b * p.hq + h) * p.t + t;

  var part = 0.0;
  if (row_ok) {
    for (var j = 0u; j < NC; j++) {
      let c = sub + j * TPR;
      if (c < D) { part += o[ob + c] * dout[ob + c]; }
    }
  }
  red[tid] = part;
  workgroupBarrier();
  var dl = 0.0;
  for (var j = 0u; j < TPR; j++) { dl += red[r * TPR + j]; }
  var lrow = 0.0;
  if (row_ok) {
    lrow = lse[li];
    if (sub == 0u) { delta[li] = dl; }
  }

  var kend = p.l;
  if (p.causal != 0u) {
    let t_last = i32(min(rf0 + BQ, p.rows) - 1u) / i32(p.g);
    kend = u32(clamp(p.off + t_last + 1, 0, i32(p.l)));
  }
  var acc: array<f32, NC>;
  for (var k0 = 0u; k0 < kend; k0 += BK) {
    workgroupBarrier();
    for (var i = tid; i < BK * D; i += WG) {
      let s = k0 + i / D;
      var kx = 0.0;
      var vx = 0.0;
      if (s < p.l) {
        let a = ((b * p.s + s) * p.hkv + hk) * D + i % D;
        kx = k[a];
        vx = v[a];
      }
      ks[i] = kx;
      vs[i] = vx;
    }
    workgroupBarrier();
    for (var j = 0u; j < NS; j++) {
      let kk = sub + j * TPR;
      let s = k0 + kk;
      var ds = 0.0;
      if (row_ok && key_ok(b, s) && (p.causal == 0u || i32(s) <= qpos)) {
        var sc = 0.0;
        var dp = 0.0;
        for (var d = 0u; d < D; d++) {
          sc += qs[r * D + d] * ks[kk * D + d];
          dp += dos[r * D + d] * vs[kk * D + d];
        }
        ds = exp(sc * p.scale - lrow) * (dp - dl);
      }
      ss[r * BK + kk] = ds;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      let ds = ss[r * BK + kk];
      for (var j = 0u; j < NC; j++) {
        acc[j] += ds * ks[kk * D + min(sub + j * TPR, D - 1u)];
      }
    }
  }

  if (!row_ok) { return; }
  for (var j = 0u; j < NC; j++) {
    let c = sub + j * TPR;
    if (c < D) { dq[ob + c] = acc[j] * p.scale; }
  }
}
