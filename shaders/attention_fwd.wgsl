// Flash-style attention forward: one workgroup owns BQ query rows of one (batch, kv head) and
// streams key blocks of BK through workgroup memory with an online softmax, so no [T, S] matrix
// ever reaches global memory. Rows are (query position, query head of the group) pairs, flattened
// as rf = t * G + g: the G query heads sharing a kv head read each key block once (decode with
// T = 1 still fills a workgroup). Optionally the key range is split over NSPLIT workgroups
// (wid.z = b * nsplit + split) writing partial outputs that attention_combine merges.
// Thread (r, sub) owns row r, scores for keys sub + j * TPR and the vec4 column groups
// sub + j * TPR of the output. Tiles are vec4 arrays: fewer, wider workgroup loads, and CPU
// adapters compile the zero-initialisation of workgroup arrays far faster for fewer elements.

const D: u32 = 64u;
const BQ: u32 = 16u;
const BK: u32 = 16u;
const TPR: u32 = 4u;
const WG: u32 = BQ * TPR;
const D4: u32 = (D + 3u) / 4u;
const NC: u32 = (D4 + TPR - 1u) / TPR;
const NS: u32 = BK / TPR;
// Finite stand-ins for -inf: backends may assume no infinities, and exp(NEG - x) is exactly 0.
const NEG: f32 = -1e30;
const MASKED: f32 = -5e29;

struct Params {
  batch: u32,
  t: u32,
  s: u32, // rows of the k/v buffer along dim 1
  l: u32, // valid keys (kvLength)
  hq: u32,
  hkv: u32,
  g: u32, // query heads per kv head
  off: i32, // position of query t in key space is off + t
  scale: f32,
  causal: u32,
  has_mask: u32,
  mask_stride: u32,
  rows: u32, // t * g
  nsplit: u32,
  chunk: u32, // keys per split, a multiple of BK
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<i32>;
@group(0) @binding(5) var<storage, read_write> o: array<f32>; // [nsplit, B, T, Hq, D]
@group(0) @binding(6) var<storage, read_write> lse: array<f32>; // [nsplit, B, Hq, T]

var<workgroup> qs: array<vec4f, BQ * D4>;
var<workgroup> ks: array<vec4f, BK * D4>;
var<workgroup> vs: array<vec4f, BK * D4>;
var<workgroup> ss: array<f32, BQ * BK>;

// Columns 4 * c4 .. 4 * c4 + 3 of the row starting at `base`, zero past D.
fn q4(base: u32, c4: u32) -> vec4f {
  var x = vec4f();
  for (var e = 0u; e < 4u; e++) { if (4u * c4 + e < D) { x[e] = q[base + 4u * c4 + e]; } }
  return x;
}

fn k4(base: u32, c4: u32) -> vec4f {
  var x = vec4f();
  for (var e = 0u; e < 4u; e++) { if (4u * c4 + e < D) { x[e] = k[base + 4u * c4 + e]; } }
  return x;
}

fn v4(base: u32, c4: u32) -> vec4f {
  var x = vec4f();
  for (var e = 0u; e < 4u; e++) { if (4u * c4 + e < D) { x[e] = v[base + 4u * c4 + e]; } }
  return x;
}

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
  let b = wid.z / p.nsplit;
  let split = wid.z % p.nsplit;

  for (var i = tid; i < BQ * D4; i += WG) {
    let rf = rf0 + i / D4;
    var x = vec4f();
    if (rf < p.rows) {
      let h = hk * p.g + rf % p.g;
      x = q4(((b * p.t + rf / p.g) * p.hq + h) * D, i % D4);
    }
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
    for (var i = tid; i < BK * D4; i += WG) {
      let s = k0 + i / D4;
      var kx = vec4f();
      var vx = vec4f();
      if (s < p.l) {
        let a = ((b * p.s + s) * p.hkv + hk) * D;
        kx = k4(a, i % D4);
        vx = v4(a, i % D4);
      }
      ks[i] = kx;
      vs[i] = vx;
    }
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
