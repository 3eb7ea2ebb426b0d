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
const PER: u32 = 16u; // logits per invocation: four vec4s (fixed)
const CAP: u32 = 128u; // candidates kept per chunk
const NONE: u32 = 0xffffffffu;
const LANES: u32 = 4u;

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
// Per bisection step, LANES counters that invocations spread over (fewer collisions per atomic).
var<workgroup> counts: array<atomic<u32>, 32 * LANES>;
var<workgroup> total_count: u32;

// The invocation's logits are four vec4s, v[q][r] = element start + lid + (4 q + r) * WG: named
// registers, since a register array indexed in a loop ends up in slow local memory.
fn keys4(z: vec4<f32>) -> vec4<u32> {
  let b = bitcast<vec4<u32>>(z);
  return select(b | vec4<u32>(0x80000000u), ~b, (b & vec4<u32>(0x80000000u)) != vec4<u32>(0u));
}

// Elements of q's vec4 inside the chunk.
fn valid4(start: u32, end: u32, lid: u32, q: u32) -> vec4<bool> {
  let i = start + lid + 4u * q * WG;
  return vec4<bool>(i < end, i + WG < end, i + 2u * WG < end, i + 3u * WG < end);
}

fn load4(base: u32, start: u32, end: u32, lid: u32, q: u32) -> vec4<f32> {
  let i = start + lid + 4u * q * WG;
  let last = end - 1u;
  return vec4<f32>(logits[base + min(i, last)], logits[base + min(i + WG, last)],
                   logits[base + min(i + 2u * WG, last)], logits[base + min(i + 3u * WG, last)]) *
         p.inv_temp;
}

// How many of the valid elements with keys `k` are >= t.
fn count4(k: vec4<u32>, ok: vec4<bool>, t: u32) -> u32 {
  return dot(select(vec4<u32>(0u), vec4<u32>(1u), ok & (k >= vec4<u32>(t))), vec4<u32>(1u));
}

struct Online {
  m: f32,
  s: f32,
  arg: u32,
}

// Online max / first argmax / sum of exp(z - max) over one element.
fn online(st: ptr<function, Online>, z: f32, ok: bool, i: u32) {
  if (!ok) { return; }
  if (z > (*st).m) {
    (*st).s = (*st).s * exp((*st).m - z) + 1.0;
    (*st).m = z;
    (*st).arg = i;
  } else {
    (*st).s += exp(z - (*st).m);
  }
}

fn online4(st: ptr<function, Online>, v: vec4<f32>, ok: vec4<bool>, i: u32) {
  online(st, v.x, ok.x, i);
  online(st, v.y, ok.y, i + WG);
  online(st, v.z, ok.z, i + 2u * WG);
  online(st, v.w, ok.w, i + 3u * WG);
}

// Writes the indices of the elements with key >= t, in order, from slot *o on.
fn emit(v: f32, ok: bool, t: u32, i: u32, o: ptr<function, u32>) {
  if (ok && keys4(vec4<f32>(v)).x >= t) {
    work[*o] = i;
    *o += 1u;
  }
}

fn emit4(v: vec4<f32>, ok: vec4<bool>, t: u32, i: u32, o: ptr<function, u32>) {
  emit(v.x, ok.x, t, i, o);
  emit(v.y, ok.y, t, i + WG, o);
  emit(v.z, ok.z, t, i + 2u * WG, o);
  emit(v.w, ok.w, t, i + 3u * WG, o);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lidv: vec3u) {
  let chunk = wid.x;
  let row = wid.y;
  let lid = lidv.x;
  let start = chunk * CH;
  let end = min(start + CH, p.vocab);
  let base = row * p.vocab;

  let v0 = load4(base, start, end, lid, 0u);
  let v1 = load4(base, start, end, lid, 1u);
  let v2 = load4(base, start, end, lid, 2u);
  let v3 = load4(base, start, end, lid, 3u);
  let ok0 = valid4(start, end, lid, 0u);
  let ok1 = valid4(start, end, lid, 1u);
  let ok2 = valid4(start, end, lid, 2u);
  let ok3 = valid4(start, end, lid, 3u);
  var st = Online(-0x1.fffffep+127f, 0.0, NONE); // lowest f32
  online4(&st, v0, ok0, start + lid);
  online4(&st, v1, ok1, start + lid + 4u * WG);
  online4(&st, v2, ok2, start + lid + 8u * WG);
  online4(&st, v3, ok3, start + lid + 12u * WG);
  let m = st.m;
  let s = st.s;
  let arg = st.arg;
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
  let k0 = keys4(v0);
  let k1 = keys4(v1);
  let k2 = keys4(v2);
  let k3 = keys4(v3);
  var thr = 0u;
  for (var bit = i32(p.bits) - 1i; bit >= 0i; bit--) {
    let cand = thr | (1u << u32(bit));
    let c = count4(k0, ok0, cand) + count4(k1, ok1, cand) + count4(k2, ok2, cand) +
            count4(k3, ok3, cand);
    let at = u32(bit) * LANES;
    atomicAdd(&counts[at + lid % LANES], c);
    workgroupBarrier();
    var total = 0u;
    for (var l = 0u; l < LANES; l++) { total += atomicLoad(&counts[at + l]); }
    if (total >= p.top_k) { thr = cand; }
  }
  red[lid].x = count4(k0, ok0, thr) + count4(k1, ok1, thr) + count4(k2, ok2, thr) +
               count4(k3, ok3, thr);
  workgroupBarrier();
  // Each invocation's first candidate slot: the exclusive prefix sum of the counts, taken over 16
  // runs of WG / 16 invocations (run sums in red[r].y, free since the tree above) rather than by
  // one invocation walking all WG counts in turn.
  let len = p.wg / 16u;
  if (lid < 16u) {
    var sum = 0u;
    for (var t = lid * len; t < (lid + 1u) * len; t++) { sum += red[t].x; }
    red[lid].y = sum;
  }
  workgroupBarrier();
  if (lid == 0u) {
    var acc = 0u;
    for (var r = 0u; r < 16u; r++) {
      let c = red[r].y;
      red[r].y = acc;
      acc += c;
    }
    work[stat + 3u] = select(acc, NONE, acc > CAP);
    total_count = acc;
  }
  workgroupBarrier();
  if (lid < 16u) {
    var acc = red[lid].y;
    for (var t = lid * len; t < (lid + 1u) * len; t++) {
      let c = red[t].x;
      red[t].x = acc;
      acc += c;
    }
  }
  if (workgroupUniformLoad(&total_count) > CAP) { return; }
  var o = (p.rows * p.chunks * 4u) + (row * p.chunks + chunk) * CAP + red[lid].x;
  emit4(v0, ok0, thr, start + lid, &o);
  emit4(v1, ok1, thr, start + lid + 4u * WG, &o);
  emit4(v2, ok2, thr, start + lid + 8u * WG, &o);
  emit4(v3, ok3, thr, start + lid + 12u * WG, &o);
}
