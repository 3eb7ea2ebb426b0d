// Register-tiled attention backward, query side (recompute as in attention_bwd_dq): one workgroup
// owns BQ query rows of one (batch, kv head), computes delta = dO . O per row (saved for the key
// side), then streams key blocks of BK: P = exp(S - lse), dS = P * (dO V^T - delta) and
// dQ += scale * dS K. Thread (ty, tx) owns rows ty + i * TY and keys tx + j * TX of the S / dP
// tile, and those rows x column groups tx + j * TX of dQ.

#include "attention_tiled.wgsl"

#const BQ: u32
#const BK: u32
const RQ: u32 = BQ / TY; // rows per thread
const RK: u32 = BK / TX; // keys per thread
const SP: u32 = BK / 4u + 1u; // vec4 stride of a row of dss

@group(0) @binding(5) var<storage, read> o: array<f32>;
@group(0) @binding(6) var<storage, read> dout: array<f32>;
// [2, B, Hq, T]: the forward's lse, then delta (written here).
@group(0) @binding(7) var<storage, read_write> stats: array<f32>;
@group(0) @binding(8) var<storage, read_write> dq: array<f32>;

var<workgroup> qs: array<vec4f, BQ * DP>;
var<workgroup> dos: array<vec4f, BQ * DP>;
var<workgroup> ks: array<vec4f, BK * DP>;
var<workgroup> vs: array<vec4f, BK * DP>;
var<workgroup> kok: array<u32, BK>;
var<workgroup> dss: array<vec4f, BQ * SP>; // partial deltas first (BK + 4 >= TX), then dS

fn o4(base: u32, c4: u32) -> vec4f {
  var x = vec4f();
  for (var e = 0u; e < 4u; e++) { if (4u * c4 + e < D) { x[e] = o[base + 4u * c4 + e]; } }
  return x;
}

fn do4(base: u32, c4: u32) -> vec4f {
  var x = vec4f();
  for (var e = 0u; e < 4u; e++) { if (4u * c4 + e < D) { x[e] = dout[base + 4u * c4 + e]; } }
  return x;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let ty = tid / TX;
  let tx = tid % TX;
  let rf0 = wid.x * BQ;
  let hk = wid.y;
  let b = wid.z;

  for (var i = tid; i < BQ * D4; i += WG) {
    let rf = rf0 + i / D4;
    var x = vec4f();
    var dx = vec4f();
    if (rf < p.rows) {
      let a = q_base(b, hk, rf);
      x = q4(a, i % D4);
      dx = do4(a, i % D4);
    }
    qs[(i / D4) * DP + i % D4] = x;
    dos[(i / D4) * DP + i % D4] = dx;
  }
  workgroupBarrier();

  var lim: array<i32, RQ>;
  var lrow: array<f32, RQ>;
  var delta: array<f32, RQ>;
  for (var i = 0u; i < RQ; i++) {
    let r = ty + i * TY;
    let rf = rf0 + r;
    lim[i] = row_lim(rf);
    var part = 0.0;
    if (rf < p.rows) {
      let ob = q_base(b, hk, rf);
      for (var j = 0u; j < NC; j++) {
        let c4 = tx + j * TX;
        if (c4 < D4) { part += dot(o4(ob, c4), dos[r * DP + c4]); }
      }
    }
    dss[r * SP + tx / 4u][tx % 4u] = part;
  }
  workgroupBarrier();
  for (var i = 0u; i < RQ; i++) {
    let r = ty + i * TY;
    let rf = rf0 + r;
    var dl = 0.0;
    for (var x = 0u; x < TX; x++) { dl += dss[r * SP + x / 4u][x % 4u]; }
    delta[i] = dl;
    if (rf < p.rows) {
      let li = (b * p.hq + hk * p.g + rf % p.g) * p.t + rf / p.g;
      lrow[i] = stats[li];
      if (tx == 0u) { stats[p.batch * p.hq * p.t + li] = dl; }
    }
  }

  let kend = key_end(rf0, BQ, p.l);
  var acc: array<array<vec4f, NC>, RQ>;
  for (var k0 = 0u; k0 < kend; k0 += BK) {
    workgroupBarrier();
    for (var i = tid; i < BK * D4; i += WG) {
      let s = k0 + i / D4;
      var kx = vec4f();
      var vx = vec4f();
      if (s < p.l) {
        let a = kv_base(b, hk, s);
        kx = k4(a, i % D4);
        vx = v4(a, i % D4);
      }
      ks[(i / D4) * DP + i % D4] = kx;
      vs[(i / D4) * DP + i % D4] = vx;
    }
    for (var i = tid; i < BK; i += WG) { kok[i] = select(0u, 1u, key_ok(b, k0 + i)); }
    workgroupBarrier();

    var sc: array<array<f32, RK>, RQ>;
    var dp: array<array<f32, RK>, RQ>;
    // Zeroed by hand: a declaration without initialiser inside a loop is zeroed only once
    // by some compilers (naga hoists it to the function entry).
    for (var i = 0u; i < RQ; i++) {
      for (var j = 0u; j < RK; j++) { sc[i][j] = 0.0; dp[i][j] = 0.0; }
    }
    for (var d = 0u; d < D4; d++) {
      var qv: array<vec4f, RQ>;
      var dv: array<vec4f, RQ>;
      for (var i = 0u; i < RQ; i++) {
        qv[i] = qs[(ty + i * TY) * DP + d];
        dv[i] = dos[(ty + i * TY) * DP + d];
      }
      for (var j = 0u; j < RK; j++) {
        let kv = ks[(tx + j * TX) * DP + d];
        let vv = vs[(tx + j * TX) * DP + d];
        for (var i = 0u; i < RQ; i++) {
          sc[i][j] += dot(qv[i], kv);
          dp[i][j] += dot(dv[i], vv);
        }
      }
    }
    for (var i = 0u; i < RQ; i++) {
      let r = ty + i * TY;
      for (var j = 0u; j < RK; j++) {
        let kk = tx + j * TX;
        var ds = 0.0;
        if (kok[kk] != 0u && i32(k0 + kk) <= lim[i]) {
          ds = exp(sc[i][j] * p.scale - lrow[i]) * (dp[i][j] - delta[i]);
        }
        dss[r * SP + kk / 4u][kk % 4u] = ds;
      }
    }
    workgroupBarrier();
    for (var k4 = 0u; k4 < BK / 4u; k4++) {
      var dv: array<vec4f, RQ>;
      for (var i = 0u; i < RQ; i++) { dv[i] = dss[(ty + i * TY) * SP + k4]; }
      for (var e = 0u; e < 4u; e++) {
        for (var j = 0u; j < NC; j++) {
          let kv = ks[(4u * k4 + e) * DP + min(tx + j * TX, D4 - 1u)];
          for (var i = 0u; i < RQ; i++) { acc[i][j] += dv[i][e] * kv; }
        }
      }
    }
  }

  for (var i = 0u; i < RQ; i++) {
    let rf = rf0 + ty + i * TY;
    if (rf >= p.rows) { continue; }
    let ob = q_base(b, hk, rf);
    for (var j = 0u; j < NC; j++) {
      let c4 = tx + j * TX;
      for (var e = 0u; e < 4u; e++) {
        if (c4 < D4 && 4u * c4 + e < D) { dq[ob + 4u * c4 + e] = acc[i][j][e] * p.scale; }
      }
    }
  }
}
