// Attention backward, query side (flash-attention-2 style recompute): one workgroup owns BQ query
// rows of one (batch, kv head) as in attention_fwd, computes delta = dO . O per row (saved for the
// key-side kernel), then streams key blocks: P = exp(S - lse), dS = P * (dO V^T - delta) and
// dQ += scale * dS K. Rows that saw no key have P = 0 everywhere, hence zero gradients.

#include "attention_bwd.wgsl"

#const BQ: u32
#const BK: u32
const WG: u32 = BQ * TPR;
const NS: u32 = BK / TPR;

@group(0) @binding(5) var<storage, read> o: array<f32>;
@group(0) @binding(6) var<storage, read> dout: array<f32>;
// [2, B, Hq, T]: the forward's lse, then delta (written here). One buffer keeps the kernels
// within 8 storage bindings, the lowest maxStorageBuffersPerShaderStage we target.
@group(0) @binding(7) var<storage, read_write> stats: array<f32>;
@group(0) @binding(8) var<storage, read_write> dq: array<f32>;

var<workgroup> qs: array<vec4f, BQ * D4>;
var<workgroup> dos: array<vec4f, BQ * D4>;
var<workgroup> ks: array<vec4f, BK * D4>;
var<workgroup> vs: array<vec4f, BK * D4>;
var<workgroup> ss: array<f32, BQ * BK>;
var<workgroup> red: array<f32, WG>;

fn o4(base: u32, c4: u32) -> vec4f {
  var x = vec4f();
  for (var e = 0u; e < 4u; e++) { if (4u * c4 + e < D) { x[e] = o[base + 4u * c4 + e]; } }
  return x;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let r = tid / TPR;
  let sub = tid % TPR;
  let rf0 = wid.x * BQ;
  let hk = wid.y;
  let b = wid.z;

  load_q_do_tile(rf0, BQ, b, hk, tid);

  let rf = rf0 + r;
  let row_ok = rf < p.rows;
  let t = rf / p.g;
  let h = hk * p.g + rf % p.g;
  let qpos = p.off + i32(t);
  let ob = ((b * p.t + t) * p.hq + h) * D;
  let li = (b * p.hq + h) * p.t + t;

  workgroupBarrier();
  var part = 0.0;
  if (row_ok) {
    for (var j = 0u; j < NC; j++) {
      let c4 = sub + j * TPR;
      if (c4 < D4) { part += dot(o4(ob, c4), dos[r * D4 + c4]); }
    }
  }
  red[tid] = part;
  workgroupBarrier();
  var dl = 0.0;
  for (var j = 0u; j < TPR; j++) { dl += red[r * TPR + j]; }
  var lrow = 0.0;
  if (row_ok) {
    lrow = stats[li];
    if (sub == 0u) { stats[p.batch * p.hq * p.t + li] = dl; }
  }

  var kend = p.l;
  if (p.causal != 0u) {
    let t_last = i32(min(rf0 + BQ, p.rows) - 1u) / i32(p.g);
    kend = u32(clamp(p.off + t_last + 1, 0, i32(p.l)));
  }
  var acc: array<vec4f, NC>;
  for (var k0 = 0u; k0 < kend; k0 += BK) {
    workgroupBarrier();
    load_kv_tile(k0, BK, b, hk, tid);
    workgroupBarrier();
    for (var j = 0u; j < NS; j++) {
      let kk = sub + j * TPR;
      let s = k0 + kk;
      var ds = 0.0;
      if (row_ok && key_ok(b, s) && (p.causal == 0u || i32(s) <= qpos)) {
        var sc = 0.0;
        var dp = 0.0;
        for (var d = 0u; d < D4; d++) {
          sc += dot(qs[r * D4 + d], ks[kk * D4 + d]);
          dp += dot(dos[r * D4 + d], vs[kk * D4 + d]);
        }
        ds = exp(sc * p.scale - lrow) * (dp - dl);
      }
      ss[r * BK + kk] = ds;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      let ds = ss[r * BK + kk];
      for (var j = 0u; j < NC; j++) {
        acc[j] += ds * ks[kk * D4 + min(sub + j * TPR, D4 - 1u)];
      }
    }
  }

  if (!row_ok) { return; }
  for (var j = 0u; j < NC; j++) {
    let c4 = sub + j * TPR;
    for (var e = 0u; e < 4u; e++) {
      if (c4 < D4 && 4u * c4 + e < D) { dq[ob + 4u * c4 + e] = acc[j][e] * p.scale; }
    }
  }
}
