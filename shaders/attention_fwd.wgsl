// Flash-style attention forward: one workgroup owns BQ query rows of one (batch, kv head) and
// streams key blocks of BK through workgroup memory with an online softmax, so no [T, S] matrix
// ever reaches global memory. Rows are (query position, query head of the group) pairs, flattened
// as rf = t * G + g: the G query heads sharing a kv head read each key block once (decode with
// T = 1 still fills a workgroup). Optionally the key range is split over NSPLIT workgroups
// (wid.z = b * nsplit + split) writing partial outputs that attention_combine merges.
// Thread (r, sub) owns row r, scores for keys sub + j * TPR and the vec4 column groups
// sub + j * TPR of the output.

#include "attention_common.wgsl"

#const BQ: u32
#const BK: u32
const WG: u32 = BQ * TPR;
const NS: u32 = BK / TPR;

@group(0) @binding(5) var<storage, read_write> o: array<f32>; // [nsplit, B, T, Hq, D]
@group(0) @binding(6) var<storage, read_write> lse: array<f32>; // [nsplit, B, Hq, T]

var<workgroup> qs: array<vec4f, BQ * D4>;
var<workgroup> ks: array<vec4f, BK * D4>;
var<workgroup> vs: array<vec4f, BK * D4>;
var<workgroup> ss: array<f32, BQ * BK>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let r = tid / TPR;
  let sub = tid % TPR;
  let rf0 = wid.x * BQ;
  let hk = wid.y;
  let b = wid.z / p.nsplit;
  let split = wid.z % p.nsplit;

  for (var i = tid; i < BQ * D4; i += WG) {
    let rf = rf0 + i / D4;
    var x = vec4f();
    if (rf < p.rows) { x = q4(q_base(b, hk, rf), i % D4); }
    qs[i] = x;
  }

  // Key range of this split, cut where causality hides every later key from the block's rows.
  var kend = min(p.l, (split + 1u) * p.chunk);
  if (p.causal != 0u) {
    let t_last = i32(min(rf0 + BQ, p.rows) - 1u) / i32(p.g);
    kend = u32(clamp(p.off + t_last + 1, 0, i32(kend)));
  }
  let kbeg = split * p.chunk;

  let rf = rf0 + r;
  let row_ok = rf < p.rows;
  let t = rf / p.g;
  let qpos = p.off + i32(t);
  var m = NEG;
  var lsum = 0.0;
  var acc: array<vec4f, NC>;

  for (var k0 = kbeg; k0 < kend; k0 += BK) {
    workgroupBarrier();
    load_kv_tile(k0, BK, b, hk, tid);
    workgroupBarrier();
    for (var j = 0u; j < NS; j++) {
      let kk = sub + j * TPR;
      let s = k0 + kk;
      var sc = NEG;
      if (row_ok && key_ok(b, s) && (p.causal == 0u || i32(s) <= qpos)) {
        var sdot = 0.0;
        for (var d = 0u; d < D4; d++) { sdot += dot(qs[r * D4 + d], ks[kk * D4 + d]); }
        sc = sdot * p.scale;
      }
      ss[r * BK + kk] = sc;
    }
    workgroupBarrier();
    var mb = m;
    for (var kk = 0u; kk < BK; kk++) { mb = max(mb, ss[r * BK + kk]); }
    let alpha = exp(m - mb);
    lsum *= alpha;
    for (var j = 0u; j < NC; j++) { acc[j] *= alpha; }
    for (var kk = 0u; kk < BK; kk++) {
      let sc = ss[r * BK + kk];
      if (sc > MASKED) {
        let pk = exp(sc - mb);
        lsum += pk;
        for (var j = 0u; j < NC; j++) {
          acc[j] += pk * vs[kk * D4 + min(sub + j * TPR, D4 - 1u)];
        }
      }
    }
    m = mb;
  }

  if (!row_ok) { return; }
  let h = hk * p.g + rf % p.g;
  // lsum >= 1 whenever a key was visible (the row maximum contributes exp(0)).
  let inv = select(0.0, 1.0 / max(lsum, 1.0), lsum > 0.0);
  let ob = (((split * p.batch + b) * p.t + t) * p.hq + h) * D;
  for (var j = 0u; j < NC; j++) {
    let c4 = sub + j * TPR;
    for (var e = 0u; e < 4u; e++) {
      if (c4 < D4 && 4u * c4 + e < D) { o[ob + 4u * c4 + e] = acc[j][e] * inv; }
    }
  }
  if (sub == 0u) {
    lse[((split * p.batch + b) * p.hq + h) * p.t + t] = select(NEG, m + log(lsum), lsum > 0.0);
  }
}
