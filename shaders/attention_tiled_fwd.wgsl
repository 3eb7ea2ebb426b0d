// Register-tiled flash attention forward for calls with many query rows (training, prefill): one
// workgroup owns BQ query rows of one (batch, kv head) (rows rf = t * G + g, so the G query heads
// of a kv head share each key block) and streams key blocks of BK through workgroup memory with an
// online softmax. Thread (ty, tx) owns rows ty + i * TY and keys tx + j * TX of the score tile,
// and the same rows x column groups tx + j * TX of the output. A row's running maximum is merged
// across its TX threads through workgroup memory; each thread keeps a partial row sum, summed at
// the end. Optionally the key range is split as in attention_fwd (attention_combine merges).

#include "attention_tiled.wgsl"

#const BQ: u32
#const BK: u32
const RQ: u32 = BQ / TY; // rows per thread
const RK: u32 = BK / TX; // keys per thread
const SP: u32 = BK / 4u + 1u; // vec4 stride of a row of ps

@group(0) @binding(5) var<storage, read_write> o: array<f32>; // [nsplit, B, T, Hq, D]
@group(0) @binding(6) var<storage, read_write> lse: array<f32>; // [nsplit, B, Hq, T]

var<workgroup> qs: array<vec4f, BQ * DP>;
var<workgroup> ks: array<vec4f, BK * DP>;
var<workgroup> vs: array<vec4f, BK * DP>;
var<workgroup> kok: array<u32, BK>;
var<workgroup> ps: array<vec4f, BQ * SP>; // probabilities of the current key block
var<workgroup> red: array<f32, BQ * TX>; // per-thread row maxima, then row sums

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let ty = tid / TX;
  let tx = tid % TX;
  let rf0 = wid.x * BQ;
  let hk = wid.y;
  let b = wid.z / p.nsplit;
  let split = wid.z % p.nsplit;

  for (var i = tid; i < BQ * D4; i += WG) {
    qs[(i / D4) * DP + i % D4] = q_row4(b, hk, rf0 + i / D4, i % D4);
  }
  let kbeg = split * p.chunk;
  let kend = key_end(rf0, BQ, min(p.l, (split + 1u) * p.chunk));

  var lim: array<i32, RQ>;
  var m: array<f32, RQ>;
  var lsum: array<f32, RQ>;
  var acc: array<array<vec4f, NC>, RQ>;
  for (var i = 0u; i < RQ; i++) {
    lim[i] = row_lim(rf0 + ty + i * TY);
    m[i] = NEG;
  }

  for (var k0 = kbeg; k0 < kend; k0 += BK) {
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
    // Zeroed by hand: a declaration without initialiser inside a loop is zeroed only once
    // by some compilers (naga hoists it to the function entry).
    for (var i = 0u; i < RQ; i++) {
      for (var j = 0u; j < RK; j++) { sc[i][j] = 0.0; }
    }
    for (var d = 0u; d < D4; d++) {
      var qv: array<vec4f, RQ>;
      for (var i = 0u; i < RQ; i++) { qv[i] = qs[(ty + i * TY) * DP + d]; }
      for (var j = 0u; j < RK; j++) {
        let kv = ks[(tx + j * TX) * DP + d];
        for (var i = 0u; i < RQ; i++) { sc[i][j] += dot(qv[i], kv); }
      }
    }
    for (var i = 0u; i < RQ; i++) {
      var mx = NEG;
      for (var j = 0u; j < RK; j++) {
        let kk = tx + j * TX;
        var x = NEG;
        if (kok[kk] != 0u && i32(k0 + kk) <= lim[i]) { x = sc[i][j] * p.scale; }
        sc[i][j] = x;
        mx = max(mx, x);
      }
      red[(ty + i * TY) * TX + tx] = mx;
    }
    workgroupBarrier();
    for (var i = 0u; i < RQ; i++) {
      let r = ty + i * TY;
      var mb = m[i];
      for (var x = 0u; x < TX; x++) { mb = max(mb, red[r * TX + x]); }
      let alpha = exp(m[i] - mb);
      m[i] = mb;
      lsum[i] *= alpha;
      for (var j = 0u; j < NC; j++) { acc[i][j] *= alpha; }
      for (var j = 0u; j < RK; j++) {
        let kk = tx + j * TX;
        let pk = select(0.0, exp(sc[i][j] - mb), sc[i][j] > MASKED);
        lsum[i] += pk;
        ps[r * SP + kk / 4u][kk % 4u] = pk;
      }
    }
    workgroupBarrier();
    for (var k4 = 0u; k4 < BK / 4u; k4++) {
      var pv: array<vec4f, RQ>;
      for (var i = 0u; i < RQ; i++) { pv[i] = ps[(ty + i * TY) * SP + k4]; }
      for (var e = 0u; e < 4u; e++) {
        for (var j = 0u; j < NC; j++) {
          let vv = vs[(4u * k4 + e) * DP + min(tx + j * TX, D4 - 1u)];
          for (var i = 0u; i < RQ; i++) { acc[i][j] += pv[i][e] * vv; }
        }
      }
    }
  }

  // Every read of red in the loop came before its last barrier: red is free for the row sums.
  for (var i = 0u; i < RQ; i++) { red[(ty + i * TY) * TX + tx] = lsum[i]; }
  workgroupBarrier();
  for (var i = 0u; i < RQ; i++) {
    let r = ty + i * TY;
    let rf = rf0 + r;
    if (rf >= p.rows) { continue; }
    var tot = 0.0;
    for (var x = 0u; x < TX; x++) { tot += red[r * TX + x]; }
    let t = rf / p.g;
    let h = hk * p.g + rf % p.g;
    // tot >= 1 whenever a key was visible (the row maximum contributes exp(0)).
    let inv = select(0.0, 1.0 / max(tot, 1.0), tot > 0.0);
    let ob = (((split * p.batch + b) * p.t + t) * p.hq + h) * D;
    for (var j = 0u; j < NC; j++) {
      let c4 = tx + j * TX;
      for (var e = 0u; e < 4u; e++) {
        if (c4 < D4 && 4u * c4 + e < D) { o[ob + 4u * c4 + e] = acc[i][j][e] * inv; }
      }
    }
    if (tx == 0u) {
      lse[((split * p.batch + b) * p.hq + h) * p.t + t] = select(NEG, m[i] + log(tot), tot > 0.0);
    }
  }
}
