// Attention backward, key side: one workgroup owns KB keys of one (batch, kv head), keeps them in
// workgroup memory and streams every query row (t, g) of the G query heads sharing the kv head in
// blocks of QB, so dK and dV come out already summed over the group and need no atomics:
// dV += P^T dO and dK += scale * dS^T Q with P, dS recomputed from the saved lse and delta.
// Thread (kr, sub) owns key kr, recomputes P/dS for rows sub + j * TPR and owns columns
// sub + j * TPR of dK/dV (vec4 column groups). Keys past kvLength get zero gradients.

#include "attention_bwd.wgsl"

#const KB: u32
#const QB: u32
const WG: u32 = KB * TPR;
const NQ: u32 = QB / TPR;

@group(0) @binding(5) var<storage, read> dout: array<f32>;
@group(0) @binding(6) var<storage, read> stats: array<f32>; // [2, B, Hq, T]: lse, delta
@group(0) @binding(7) var<storage, read_write> dk: array<f32>;
@group(0) @binding(8) var<storage, read_write> dv: array<f32>;

var<workgroup> ks: array<vec4f, KB * D4>;
var<workgroup> vs: array<vec4f, KB * D4>;
var<workgroup> qs: array<vec4f, QB * D4>;
var<workgroup> dos: array<vec4f, QB * D4>;
var<workgroup> ps: array<f32, QB * KB>;
var<workgroup> dss: array<f32, QB * KB>;
var<workgroup> lses: array<f32, QB>;
var<workgroup> deltas: array<f32, QB>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let kr = tid / TPR;
  let sub = tid % TPR;
  let s0 = wid.x * KB;
  let hk = wid.y;
  let b = wid.z;

  load_kv_tile(s0, KB, b, hk, tid);

  let s = s0 + kr;
  var kvis = s < p.l;
  if (kvis && p.has_mask != 0u) { kvis = mask[b * p.mask_stride + s] != 0; }

  // Causality hides this block from every query t with off + t < s0: start at the first row
  // that can see it, rounded down to a block boundary.
  var rstart = 0u;
  var rend = p.rows;
  if (s0 >= p.l) { rend = 0u; }
  if (p.causal != 0u) {
    let tfirst = max(i32(s0) - p.off, 0);
    rstart = min(u32(tfirst) * p.g, p.rows) / QB * QB;
  }

  var dka: array<vec4f, NC>;
  var dva: array<vec4f, NC>;
  for (var rf0 = rstart; rf0 < rend; rf0 += QB) {
    workgroupBarrier();
    load_q_do_tile(rf0, QB, b, hk, tid);
    if (tid < QB) {
      let rf = rf0 + tid;
      var ls = 0.0;
      var dl = 0.0;
      if (rf < p.rows) {
        let li = (b * p.hq + hk * p.g + rf % p.g) * p.t + rf / p.g;
        ls = stats[li];
        dl = stats[p.batch * p.hq * p.t + li];
      }
      lses[tid] = ls;
      deltas[tid] = dl;
    }
    workgroupBarrier();
    for (var j = 0u; j < NQ; j++) {
      let qq = sub + j * TPR;
      let rf = rf0 + qq;
      var pk = 0.0;
      var ds = 0.0;
      if (kvis && rf < p.rows && (p.causal == 0u || i32(s) <= p.off + i32(rf / p.g))) {
        var sc = 0.0;
        var dp = 0.0;
        for (var d = 0u; d < D4; d++) {
          sc += dot(qs[qq * D4 + d], ks[kr * D4 + d]);
          dp += dot(dos[qq * D4 + d], vs[kr * D4 + d]);
        }
        pk = exp(sc * p.scale - lses[qq]);
        ds = pk * (dp - deltas[qq]);
      }
      ps[qq * KB + kr] = pk;
      dss[qq * KB + kr] = ds;
    }
    workgroupBarrier();
    for (var qq = 0u; qq < QB; qq++) {
      let pk = ps[qq * KB + kr];
      let ds = dss[qq * KB + kr];
      for (var j = 0u; j < NC; j++) {
        let c4 = min(sub + j * TPR, D4 - 1u);
        dva[j] += pk * dos[qq * D4 + c4];
        dka[j] += ds * qs[qq * D4 + c4];
      }
    }
  }

  if (s >= p.s) { return; }
  let a = kv_base(b, hk, s);
  for (var j = 0u; j < NC; j++) {
    let c4 = sub + j * TPR;
    for (var e = 0u; e < 4u; e++) {
      let c = 4u * c4 + e;
      if (c4 < D4 && c < D) {
        dk[a + c] = dka[j][e] * p.scale;
        dv[a + c] = dva[j][e];
      }
    }
  }
}
