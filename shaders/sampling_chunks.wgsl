// First pass of the sampler (sampling.wgsl is the second): the vocabulary of each row is cut
// into chunks of WG * PER logits, one workgroup per (chunk, row), so the whole GPU reads the
// logits once instead of one workgroup per row reading them many times.
// Per chunk it writes the max of z = logits / temperature, the first argmax, the softmax sum
// relative to that max and, when top-k is on, the chunk's top-k candidates: the indices with
// key(z) >= the chunk's k-th largest key (ties included). Every token of the row's top-k set is
// among its chunk's candidates (fewer than k tokens of its chunk are larger), so the second
// pass finds the exact top-k and top-p thresholds among these few. The local threshold comes
// from a bisection over the order-preserving u32 keys, on values held in registers.
// Candidates are written in a fixed order (invocation, then element), so a seed fixes the draw.
// A chunk with more than CAP candidates (heavy ties), or top-k off, writes count = NONE and the
// second pass falls back to scanning the whole row.

const WG: u32 = 256u;
const PER: u32 = 16u; // logits per invocation
const CAP: u32 = 128u; // candidates kept per chunk
const NONE: u32 = 0xffffffffu;

const CH: u32 = WG * PER;

struct Params {
  rows: u32,
  vocab: u32,
  chunks: u32,
  top_k: u32, // 0 = no candidates
  inv_temp: f32,
  // 32 and WG at run time: Mesa's CPU compiler fully unrolls constant loops and then takes
  // seconds to build the shader.
  bits: u32,
  wg: u32,
  _p0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>; // [rows, vocab]
// [rows, chunks, 4] stats (max bits, sum bits, argmax, count), then [rows, chunks, CAP] indices
@group(0) @binding(2) var<storage, read_write> work: array<u32>;

// (max bits, bits of the sum relative to it, first argmax) per invocation, then the candidate
// offsets; one array keeps the launch's zero fill short (Mesa's CPU compiler is slow on each
// workgroup array). Floats travel as u32 bits so no bit pattern is ever touched.
var<workgroup> red: array<vec3<u32>, WG>;
var<workgroup> counts: array<atomic<u32>, 32>;
var<workgroup> total_count: u32;

fn key(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  if ((b & 0x80000000u) != 0u) { return ~b; }
  return b | 0x80000000u;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lidv: vec3u) {
  let chunk = wid.x;
  let row = wid.y;
  let lid = lidv.x;
  let start = chunk * CH;
  let end = min(start + CH, p.vocab);
  let base = row * p.vocab;

  var z: array<f32, PER>;
  var m = -0x1.fffffep+127f;
  var arg = NONE;
  var s = 0.0;
  for (var j = 0u; j < PER; j++) {
    let i = start + lid + j * WG;
    z[j] = logits[base + min(i, end - 1u)] * p.inv_temp;
    if (i < end) {
      if (z[j] > m) {
        s = s * exp(m - z[j]) + 1.0;
        m = z[j];
        arg = i;
      } else {
        s += exp(z[j] - m);
      }
    }
  }
  // One tree merges (max, first argmax, sum relative to the max).
  red[lid] = vec3<u32>(bitcast<u32>(m), bitcast<u32>(select(s, 0.0, arg == NONE)), arg);
  workgroupBarrier();
  for (var st = p.wg / 2u; st > 0u; st = st >> 1u) {
    if (lid < st) {
      let a = red[lid];
      let b = red[lid + st];
      let am = bitcast<f32>(a.x);
      let bm = bitcast<f32>(b.x);
      let top = max(am, bm);
      let sum = bitcast<f32>(a.y) * exp(am - top) + bitcast<f32>(b.y) * exp(bm - top);
      let take_b = bm > am || (bm == am && b.z < a.z);
      red[lid] = vec3<u32>(bitcast<u32>(top), bitcast<u32>(sum), select(a.z, b.z, take_b));
    }
    workgroupBarrier();
  }
  let cmax = bitcast<f32>(red[0].x);
  let stat = (row * p.chunks + chunk) * 4u;
  if (lid == 0u) {
    work[stat] = bitcast<u32>(cmax);
    work[stat + 1u] = red[0].y;
    work[stat + 2u] = red[0].z;
  }
  if (p.top_k == 0u) {
    if (lid == 0u) { work[stat + 3u] = NONE; }
    return;
  }

  // The largest key t with at least top_k keys >= t in this chunk (0 keeps the whole chunk).
  var thr = 0u;
  for (var bit = i32(p.bits) - 1i; bit >= 0i; bit--) {
    let cand = thr | (1u << u32(bit));
    var c = 0u;
    for (var j = 0u; j < PER; j++) {
      if (start + lid + j * WG < end && key(z[j]) >= cand) { c++; }
    }
    atomicAdd(&counts[bit], c);
    workgroupBarrier();
    if (atomicLoad(&counts[bit]) >= p.top_k) { thr = cand; }
  }
  var mine = 0u;
  for (var j = 0u; j < PER; j++) {
    if (start + lid + j * WG < end && key(z[j]) >= thr) { mine++; }
  }
  red[lid].x = mine;
  workgroupBarrier();
  if (lid == 0u) {
    var acc = 0u;
    for (var t = 0u; t < p.wg; t++) {
      let c = red[t].x;
      red[t].x = acc;
      acc += c;
    }
    work[stat + 3u] = select(acc, NONE, acc > CAP);
    total_count = acc;
  }
  if (workgroupUniformLoad(&total_count) > CAP) { return; }
  var o = (p.rows * p.chunks * 4u) + (row * p.chunks + chunk) * CAP + red[lid].x;
  for (var j = 0u; j < PER; j++) {
    let i = start + lid + j * WG;
    if (i < end && key(z[j]) >= thr) {
      work[o] = i;
      o++;
    }
  }
}
