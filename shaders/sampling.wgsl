// One decoding step's token choice, one workgroup per sequence, nothing read back.
// z = logits / temperature. Greedy takes the first argmax. Sampling keeps the tokens whose value
// is at or above a threshold found by bisection over the order-preserving u32 keys of f32 values:
// top-k keeps the largest key whose count reaches k (ties at the k-th value stay, as in HF), top-p
// then the largest key whose softmax mass (within the top-k set) reaches top_p. A counter-based
// hash of (seed, step, row) gives the uniform for an inverse-CDF draw over the kept tokens, in a
// fixed order (thread-strided), so a seed fixes every token. The log-prob written is the full
// log-softmax of z at the chosen token (verl's actor log-prob at this temperature).
// Rows already finished get the pad token and mask 0; an EOS is kept (mask 1) and finishes a row.

const WG: u32 = 256u;

struct Params {
  rows: u32,
  vocab: u32,
  stride: u32, // response length R: outputs are [rows, R], written at column `step`
  step: u32,
  inv_temp: f32,
  top_k: u32, // 0 = off
  top_p: f32, // >= 1 = off
  do_sample: u32,
  seed: u32,
  pad: i32,
  n_eos: u32,
  _p0: u32,
  e0: i32,
  e1: i32,
  e2: i32,
  e3: i32,
  e4: i32,
  e5: i32,
  e6: i32,
  e7: i32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>; // [rows, vocab]
@group(0) @binding(2) var<storage, read_write> responses: array<i32>; // [rows, R]
@group(0) @binding(3) var<storage, read_write> response_mask: array<i32>; // [rows, R]
@group(0) @binding(4) var<storage, read_write> log_probs: array<f32>; // [rows, R]
@group(0) @binding(5) var<storage, read_write> finished: array<u32>; // [rows]
@group(0) @binding(6) var<storage, read_write> next_ids: array<i32>; // [rows]: next decode input
@group(0) @binding(7) var<storage, read_write> positions: array<i32>; // [rows]: its rotary position

var<workgroup> red_f: array<f32, WG>;
var<workgroup> red_i: array<u32, WG>;
var<workgroup> chosen: array<u32, 2>;
var<workgroup> target_mass: f32;

fn pcg(v: u32) -> u32 {
  let s = v * 747796405u + 2891336453u;
  let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}

// Uniform in [0, 1) with 24 random bits; the TS reference computes the same value.
fn uniform01(seed: u32, step: u32, row: u32) -> f32 {
  let h = pcg(row ^ pcg(step ^ pcg(seed)));
  return f32(h >> 8u) * (1.0 / 16777216.0);
}

// Order-preserving map of f32 to u32 (larger float, larger key).
fn key(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  if ((b & 0x80000000u) != 0u) { return ~b; }
  return b | 0x80000000u;
}

fn is_eos(t: i32) -> bool {
  let e = array<i32, 8>(p.e0, p.e1, p.e2, p.e3, p.e4, p.e5, p.e6, p.e7);
  for (var i = 0u; i < min(p.n_eos, 8u); i++) {
    if (e[i] == t) { return true; }
  }
  return false;
}

fn reduce_sum(v: f32, lid: u32) -> f32 {
  red_f[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) { red_f[lid] = red_f[lid] + red_f[lid + s]; }
    workgroupBarrier();
  }
  let r = red_f[0];
  workgroupBarrier();
  return r;
}

// Number of tokens (as f32, exact below 2^24) with key >= k.
fn count_at_least(base: u32, k: u32, lid: u32) -> f32 {
  var c = 0.0;
  for (var i = lid; i < p.vocab; i += WG) {
    if (key(logits[base + i] * p.inv_temp) >= k) { c += 1.0; }
  }
  return reduce_sum(c, lid);
}

// Unnormalised softmax mass of the tokens with key >= k.
fn mass_at_least(base: u32, k: u32, m: f32, lid: u32) -> f32 {
  var s = 0.0;
  for (var i = lid; i < p.vocab; i += WG) {
    let z = logits[base + i] * p.inv_temp;
    if (key(z) >= k) { s += exp(z - m); }
  }
  return reduce_sum(s, lid);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lidv: vec3u) {
  let row = wid.y * nwg.x + wid.x;
  if (row >= p.rows) { return; }
  let lid = lidv.x;
  let base = row * p.vocab;

  // Max, first argmax and the full softmax normaliser (online, per thread, then merged).
  var m = -0x1.fffffep+127f; // lowest f32 (Tint rejects -3.4028235e38 as out of range)
  var arg = 0xffffffffu;
  var s = 0.0;
  for (var i = lid; i < p.vocab; i += WG) {
    let z = logits[base + i] * p.inv_temp;
    if (z > m) {
      s = s * exp(m - z) + 1.0;
      m = z;
      arg = i;
    } else {
      s += exp(z - m);
    }
  }
  red_f[lid] = m;
  red_i[lid] = arg;
  workgroupBarrier();
  for (var st = WG / 2u; st > 0u; st = st >> 1u) {
    if (lid < st) {
      let a = red_f[lid];
      let b = red_f[lid + st];
      if (b > a || (b == a && red_i[lid + st] < red_i[lid])) {
        red_f[lid] = b;
        red_i[lid] = red_i[lid + st];
      }
    }
    workgroupBarrier();
  }
  let row_max = red_f[0];
  let row_arg = red_i[0];
  workgroupBarrier();
  let total = reduce_sum(select(s * exp(m - row_max), 0.0, arg == 0xffffffffu), lid);

  var token = row_arg;
  if (p.do_sample != 0u) {
    var thr = 0u;
    if (p.top_k > 0u && p.top_k < p.vocab) {
      for (var bit = 31i; bit >= 0i; bit--) {
        let cand = thr | (1u << u32(bit));
        if (count_at_least(base, cand, lid) >= f32(p.top_k)) { thr = cand; }
      }
    }
    if (p.top_p < 1.0) {
      let need = p.top_p * mass_at_least(base, thr, row_max, lid);
      var tp = 0u;
      for (var bit = 31i; bit >= 0i; bit--) {
        let cand = tp | (1u << u32(bit));
        if (mass_at_least(base, max(cand, thr), row_max, lid) >= need) { tp = cand; }
      }
      thr = max(tp, thr);
    }
    // Inverse CDF over the kept tokens, ordered by (thread, index).
    var mine = 0.0;
    for (var i = lid; i < p.vocab; i += WG) {
      let z = logits[base + i] * p.inv_temp;
      if (key(z) >= thr) { mine += exp(z - row_max); }
    }
    red_f[lid] = mine;
    workgroupBarrier();
    if (lid == 0u) {
      var kept = 0.0;
      for (var j = 0u; j < WG; j++) { kept += red_f[j]; }
      let goal = uniform01(p.seed, p.step, row) * kept;
      var acc = 0.0;
      var sel = 0xffffffffu;
      var last = 0u;
      for (var j = 0u; j < WG; j++) {
        let mj = red_f[j];
        if (mj > 0.0) {
          last = j;
          if (sel == 0xffffffffu && goal < acc + mj) {
            sel = j;
            target_mass = goal - acc;
          }
          if (sel == 0xffffffffu) { acc += mj; }
        }
      }
      if (sel == 0xffffffffu) { // rounding pushed the goal past the end: take the last kept
        sel = last;
        target_mass = red_f[last];
      }
      chosen[0] = sel;
      chosen[1] = row_arg;
    }
    workgroupBarrier();
    if (lid == chosen[0]) {
      let goal = target_mass;
      var acc = 0.0;
      var pick = chosen[1];
      for (var i = lid; i < p.vocab; i += WG) {
        let z = logits[base + i] * p.inv_temp;
        if (key(z) >= thr) {
          acc += exp(z - row_max);
          pick = i;
          if (goal < acc) { break; }
        }
      }
      chosen[1] = pick;
    }
    workgroupBarrier();
    token = chosen[1];
  }

  if (lid == 0u) {
    let out = row * p.stride + p.step;
    let done = finished[row] != 0u;
    var t = i32(token);
    var lp = logits[base + token] * p.inv_temp - row_max - log(total);
    if (done) {
      t = p.pad;
      lp = 0.0;
    } else if (is_eos(t)) {
      finished[row] = 1u;
    }
    responses[out] = t;
    response_mask[out] = select(1, 0, done);
    log_probs[out] = lp;
    next_ids[row] = t;
    positions[row] = positions[row] + 1;
  }
}
