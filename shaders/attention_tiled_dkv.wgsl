// Register-tiled attention backward, key side (as attention_bwd_dkv): one workgroup owns BK keys
// of one (batch, kv head) and streams the query rows (t, g) of the G query heads sharing the kv
// head in blocks of BQ, so dK and dV come out summed over the group without atomics:
// dV += P^T dO and dK += scale * dS^T Q, P and dS recomputed from the saved lse and delta.
// Thread (ty, tx) owns keys ty + i * TY and rows tx + j * TX of the P / dS tile, and those keys x
// column groups tx + j * TX of dK and dV. Keys past kvLength get zero gradients.

#include "attention_tiled.wgsl"

#const BQ: u32
#const BK: u32
const RK: u32 = BK / TY; // keys per thread
const RQ: u32 = BQ / TX; // rows per thread
const SP: u32 = BQ / 4u + 1u; // vec4 stride of a key's row of ps / dss

@group(0) @binding(5) var<storage, read> dout: array<f32>;
@group(0) @binding(6) var<storage, read> stats: array<f32>; // [2, B, Hq, T]: lse, delta
@group(0) @binding(7) var<storage, read_write> dk: array<f32>;
@group(0) @binding(8) var<storage, read_write> dv: array<f32>;

var<workgroup> ks: array<vec4f, BK * DP>;
var<workgroup> vs: array<vec4f, BK * DP>;
var<workgroup> qs: array<vec4f, BQ * DP>;
var<workgroup> dos: array<vec4f, BQ * DP>;
var<workgroup> ps: array<vec4f, BK * SP>;
var<workgroup> dss: array<vec4f, BK * SP>;
var<workgroup> lses: array<f32, BQ>;
var<workgroup> deltas: array<f32, BQ>;
var<workgroup> lims: array<i32, BQ>;

fn do4(base: u32, c4: u32) -> vec4f {
  var x = vec4f();
  for (var e = 0u; e < 4u; e++) { if (4u * c4 + e < D) { x[e] = dout[base + 4u * c4 + e]; } }
  return x;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let ty = tid / TX;
  let tx = tid % TX;
  let s0 = wid.x * BK;
  let hk = wid.y;
  let b = wid.z;

  for (var i = tid; i < BK * D4; i += WG) {
    let s = s0 + i / D4;
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
  var kvis: array<bool, RK>;
  for (var i = 0u; i < RK; i++) { kvis[i] = key_ok(b, s0 + ty + i * TY); }

  // Causality hides this block from every row with off + t < s0: start at the first row that
  // can see it, rounded down to a block boundary.
  var rstart = 0u;
  var rend = p.rows;
  if (s0 >= p.l) { rend = 0u; }
  if (p.causal != 0u) {
    let tfirst = max(i32(s0) - p.off, 0);
    rstart = min(u32(tfirst) * p.g, p.rows) / BQ * BQ;
  }

  var dka: array<array<vec4f, NC>, RK>;
  var dva: array<array<vec4f, NC>, RK>;
  for (var rf0 = rstart; rf0 < rend; rf0 += BQ) {
    workgroupBarrier();
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
    for (var r = tid; r < BQ; r += WG) {
      let rf = rf0 + r;
      var ls = 0.0;
      var dl = 0.0;
      if (rf < p.rows) {
        let li = (b * p.hq + hk * p.g + rf % p.g) * p.t + rf / p.g;
        ls = stats[li];
        dl = stats[p.batch * p.hq * p.t + li];
      }
      lses[r] = ls;
      deltas[r] = dl;
      lims[r] = row_lim(rf);
    }
    workgroupBarrier();

    var sc: array<array<f32, RQ>, RK>;
    var dp: array<array<f32, RQ>, RK>;
    // Zeroed by hand: a declaration without initialiser inside a loop is zeroed only once
    // by some compilers (naga hoists it to the function entry).
    for (var i = 0u; i < RK; i++) {
      for (var j = 0u; j < RQ; j++) { sc[i][j] = 0.0; dp[i][j] = 0.0; }
    }
    for (var d = 0u; d < D4; d++) {
      var kv: array<vec4f, RK>;
      var vv: array<vec4f, RK>;
      for (var i = 0u; i < RK; i++) {
        kv[i] = ks[(ty + i * TY) * DP + d];
        vv[i] = vs[(ty + i * TY) * DP + d];
      }
      for (var j = 0u; j < RQ; j++) {
        let qv = qs[(tx + j * TX) * DP + d];
        let dx = dos[(tx + j * TX) * DP + d];
        for (var i = 0u; i < RK; i++) {
          sc[i][j] += dot(kv[i], qv);
          dp[i][j] += dot(vv[i], dx);
        }
      }
    }
    for (var i = 0u; i < RK; i++) {
      let kr = ty + i * TY;
      for (var j = 0u; j < RQ; j++) {
        let r = tx + j * TX;
        var pk = 0.0;
        var ds = 0.0;
        if (kvis[i] && i32(s0 + kr) <= lims[r]) {
          pk = exp(sc[i][j] * p.scale - lses[r]);
          ds = pk * (dp[i][j] - deltas[r]);
        }
        ps[kr * SP + r / 4u][r % 4u] = pk;
        dss[kr * SP + r / 4u][r % 4u] = ds;
      }
    }
    workgroupBarrier();
    for (var r4 = 0u; r4 < BQ / 4u; r4++) {
      var pv: array<vec4f, RK>;
      var dsv: array<vec4f, RK>;
      for (var i = 0u; i < RK; i++) {
        pv[i] = ps[(ty + i * TY) * SP + r4];
        dsv[i] = dss[(ty + i * TY) * SP + r4];
      }
      for (var e = 0u; e < 4u; e++) {
        for (var j = 0u; j < NC; j++) {
          let c = min(tx + j * TX, D4 - 1u);
          let dx = dos[(4u * r4 + e) * DP + c];
          let qv = qs[(4u * r4 + e) * DP + c];
          for (var i = 0u; i < RK; i++) {
            dva[i][j] += pv[i][e] * dx;
            dka[i][j] += dsv[i][e] * qv;
          }
        }
      }
    }
  }

  for (var i = 0u; i < RK; i++) {
    let s = s0 + ty + i * TY;
    if (s >= p.s) { continue; }
    let a = kv_base(b, hk, s);
    for (var j = 0u; j < NC; j++) {
      let c4 = tx + j * TX;
      for (var e = 0u; e < 4u; e++) {
        let c = 4u * c4 + e;
        if (c4 < D4 && c < D) {
          dk[a + c] = dka[i][j][e] * p.scale;
          dv[a + c] = dva[i][j][e];
        }
      }
    }
  }
}
