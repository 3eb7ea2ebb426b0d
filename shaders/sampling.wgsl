// One decoding step's token choice, second pass (sampling_chunks.wgsl is the first): one
// workgroup per sequence, nothing read back. z = logits / temperature.
// The per-chunk stats give the row max, the first argmax (greedy) and the softmax normaliser.
// Sampling keeps the tokens whose key (order-preserving u32 of z) is at or above a threshold:
// top-k keeps the largest key whose count reaches k (ties at the k-th value stay, as in HF), top-p
// then the largest key whose softmax mass (within the top-k set) reaches top_p. With top-k on,
// both thresholds are found by bisection among the chunks' candidates held in workgroup memory
// (they contain the whole top-k set, see the first pass); with neither on, a chunk is drawn by
// its mass and the token within it; otherwise (top-p alone, or candidates overflowing) the
// bisections scan the whole row. A counter-based hash of (seed, step, row) gives the uniform for
// an inverse-CDF draw over the kept tokens in a fixed order, so a seed fixes every token; with
// per_row on, each row brings its own (seed, step) and hashes as row 0 (a request of a continuous
// batch draws the same tokens whatever runs beside it, as a one-row batch of its seed). The
// log-prob written is the full log-softmax of z at the chosen token (verl's actor log-prob at
// this temperature). Rows already finished get the pad token and mask 0; an EOS is kept (mask 1)
// and finishes a row.

const WG: u32 = 256u;
const CAP: u32 = 128u; // candidates per chunk (as in the first pass)
const MAXC: u32 = 4096u; // candidates per row held in workgroup memory (more: scan the row)
const MAXCH: u32 = 256u; // chunks per row on the candidate path (more: scan the row)
const NONE: u32 = 0xffffffffu;
const CHUNK: u32 = 4096u; // logits per chunk of the first pass

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
  chunks: u32, // chunks per row of the first pass
  e0: i32,
  e1: i32,
  e2: i32,
  e3: i32,
  e4: i32,
  e5: i32,
  e6: i32,
  e7: i32,
  // 32 and WG, passed at run time: loops with constant trip counts get fully unrolled by Mesa's
  // CPU compiler, which then takes minutes to build this shader.
  bits: u32,
  wg: u32,
  per_row: u32, // 1: row_rng holds each row's (seed, step)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>; // [rows, vocab]
@group(0) @binding(2) var<storage, read> work: array<u32>; // the first pass's stats, candidates
@group(0) @binding(3) var<storage, read_write> responses: array<i32>; // [rows, R]
@group(0) @binding(4) var<storage, read_write> response_mask: array<i32>; // [rows, R]
@group(0) @binding(5) var<storage, read_write> log_probs: array<f32>; // [rows, R]
@group(0) @binding(6) var<storage, read_write> finished: array<u32>; // [rows]
@group(0) @binding(7) var<storage, read_write> next_ids: array<i32>; // [rows]: next decode input
@group(0) @binding(8) var<storage, read_write> positions: array<i32>; // [rows]: its position
@group(0) @binding(9) var<storage, read> row_rng: array<u32>; // [rows, 2] when per_row

// Per invocation: (f32 bits of a partial sum or max, an index). One array keeps the launch's
// zero fill short (Mesa's CPU compiler is slow on each workgroup array).
var<workgroup> red: array<vec2<u32>, WG>;
var<workgroup> chosen: array<u32, 2>;
var<workgroup> target_mass: f32;
var<workgroup> uz: array<f32, MAXC>; // candidates' z, chunk after chunk
var<workgroup> coff: array<u32, MAXCH>; // first candidate of each chunk
var<workgroup> counts: array<atomic<u32>, 32>;
var<workgroup> n_union: u32; // candidates of the row, or NONE to scan the whole row

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
  red[lid].x = bitcast<u32>(v);
  workgroupBarrier();
  for (var s = p.wg / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) {
      red[lid].x = bitcast<u32>(bitcast<f32>(red[lid].x) + bitcast<f32>(red[lid + s].x));
    }
    workgroupBarrier();
  }
  let r = bitcast<f32>(red[0].x);
  workgroupBarrier();
  return r;
}

fn z_at(base: u32, i: u32) -> f32 {
  return logits[base + i] * p.inv_temp;
}

// Mass (or count) of the values with key >= k over the row, or over the candidate union.
fn mass_row(base: u32, k: u32, m: f32, lid: u32, count: bool) -> f32 {
  var s = 0.0;
  for (var i = lid; i < p.vocab; i += WG) {
    let z = z_at(base, i);
    if (key(z) >= k) { s += select(exp(z - m), 1.0, count); }
  }
  return reduce_sum(s, lid);
}

fn mass_union(n: u32, k: u32, m: f32, lid: u32) -> f32 {
  var s = 0.0;
  for (var i = lid; i < n; i += WG) {
    if (key(uz[i]) >= k) { s += exp(uz[i] - m); }
  }
  return reduce_sum(s, lid);
}

// Inverse CDF at u over the kept values in (invocation, element) order; each invocation's share
// sits in red_f. Sets chosen[0] to the invocation holding the draw and target_mass to the mass
// still to cover inside it (rounding past the end takes the last kept invocation).
fn pick_invocation(u: f32) {
  var kept = 0.0;
  for (var j = 0u; j < p.wg; j++) { kept += bitcast<f32>(red[j].x); }
  let goal = u * kept;
  var acc = 0.0;
  var sel = NONE;
  var last = 0u;
  for (var j = 0u; j < p.wg; j++) {
    let mj = bitcast<f32>(red[j].x);
    if (mj > 0.0) {
      last = j;
      if (sel == NONE && goal < acc + mj) {
        sel = j;
        target_mass = goal - acc;
      }
      if (sel == NONE) { acc += mj; }
    }
  }
  if (sel == NONE) {
    sel = last;
    target_mass = bitcast<f32>(red[last].x);
  }
  chosen[0] = sel;
}

// Draws among elements lo..hi of the row with key >= thr; `dflt` if none is kept.
fn draw_row(base: u32, lo: u32, hi: u32, thr: u32, m: f32, u: f32, lid: u32, dflt: u32) -> u32 {
  var mine = 0.0;
  for (var i = lo + lid; i < hi; i += WG) {
    let z = z_at(base, i);
    if (key(z) >= thr) { mine += exp(z - m); }
  }
  red[lid].x = bitcast<u32>(mine);
  workgroupBarrier();
  if (lid == 0u) {
    pick_invocation(u);
    chosen[1] = dflt;
  }
  workgroupBarrier();
  if (lid == chosen[0]) {
    var acc = 0.0;
    var pick = dflt;
    for (var i = lo + lid; i < hi; i += WG) {
      let z = z_at(base, i);
      if (key(z) >= thr) {
        acc += exp(z - m);
        pick = i;
        if (target_mass < acc) { break; }
      }
    }
    chosen[1] = pick;
  }
  return workgroupUniformLoad(&chosen[1]);
}

// The same over the candidate union; returns the row index of the drawn candidate.
fn draw_union(row: u32, n: u32, thr: u32, m: f32, u: f32, lid: u32, dflt: u32) -> u32 {
  var mine = 0.0;
  for (var i = lid; i < n; i += WG) {
    if (key(uz[i]) >= thr) { mine += exp(uz[i] - m); }
  }
  red[lid].x = bitcast<u32>(mine);
  workgroupBarrier();
  if (lid == 0u) {
    pick_invocation(u);
    chosen[1] = dflt;
  }
  workgroupBarrier();
  if (lid == chosen[0]) {
    var acc = 0.0;
    var pick = NONE;
    for (var i = lid; i < n; i += WG) {
      if (key(uz[i]) >= thr) {
        acc += exp(uz[i] - m);
        pick = i;
        if (target_mass < acc) { break; }
      }
    }
    if (pick != NONE) { // union position -> (chunk, slot) -> token
      var c = 0u;
      while (c + 1u < p.chunks && coff[c + 1u] <= pick) { c++; }
      chosen[1] = work[p.rows * p.chunks * 4u + (row * p.chunks + c) * CAP + pick - coff[c]];
    }
  }
  return workgroupUniformLoad(&chosen[1]);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lidv: vec3u) {
  let row = wid.y * nwg.x + wid.x;
  if (row >= p.rows) { return; }
  let lid = lidv.x;
  let base = row * p.vocab;
  let stats = row * p.chunks * 4u;

  // Row max and first argmax over the chunks' (a chunk's argmax is its first), then the sum.
  var m = -0x1.fffffep+127f; // lowest f32 (Tint rejects -3.4028235e38 as out of range)
  var arg = NONE;
  for (var c = lid; c < p.chunks; c += WG) {
    let cm = bitcast<f32>(work[stats + c * 4u]);
    let ca = work[stats + c * 4u + 2u];
    if (ca != NONE && cm > m) {
      m = cm;
      arg = ca;
    }
  }
  red[lid].x = bitcast<u32>(m);
  red[lid].y = arg;
  workgroupBarrier();
  for (var st = p.wg / 2u; st > 0u; st = st >> 1u) {
    if (lid < st) {
      let a = bitcast<f32>(red[lid].x);
      let b = bitcast<f32>(red[lid + st].x);
      if (b > a || (b == a && red[lid + st].y < red[lid].y)) {
        red[lid].x = bitcast<u32>(b);
        red[lid].y = red[lid + st].y;
      }
    }
    workgroupBarrier();
  }
  let row_max = bitcast<f32>(red[0].x);
  let row_arg = red[0].y;
  workgroupBarrier();
  var s = 0.0;
  for (var c = lid; c < p.chunks; c += WG) {
    if (work[stats + c * 4u + 2u] != NONE) {
      let cm = bitcast<f32>(work[stats + c * 4u]);
      s += bitcast<f32>(work[stats + c * 4u + 1u]) * exp(cm - row_max);
    }
  }
  let total = reduce_sum(s, lid);

  var token = row_arg;
  if (p.do_sample != 0u) {
    var u = uniform01(p.seed, p.step, row);
    if (p.per_row != 0u) { u = uniform01(row_rng[2u * row], row_rng[2u * row + 1u], 0u); }
    if (lid == 0u) {
      var acc = 0u;
      var ok = p.top_k > 0u && p.chunks <= MAXCH;
      for (var c = 0u; ok && c < p.chunks; c++) {
        let n = work[stats + c * 4u + 3u];
        coff[c] = acc;
        ok = n != NONE && acc + n <= MAXC;
        acc += n;
      }
      n_union = select(NONE, acc, ok);
    }
    let nu = workgroupUniformLoad(&n_union);
    if (nu != NONE) {
      // Candidates into workgroup memory, then both thresholds among them.
      for (var c = 0u; c < p.chunks; c++) {
        let n = work[stats + c * 4u + 3u];
        let at = p.rows * p.chunks * 4u + (row * p.chunks + c) * CAP;
        for (var i = lid; i < n; i += WG) { uz[coff[c] + i] = z_at(base, work[at + i]); }
      }
      workgroupBarrier();
      var thr = 0u;
      for (var bit = i32(p.bits) - 1i; bit >= 0i; bit--) {
        let cand = thr | (1u << u32(bit));
        var cnt = 0u;
        for (var i = lid; i < nu; i += WG) { cnt += select(0u, 1u, key(uz[i]) >= cand); }
        atomicAdd(&counts[bit], cnt);
        workgroupBarrier();
        if (atomicLoad(&counts[bit]) >= p.top_k) { thr = cand; }
      }
      if (p.top_p < 1.0) {
        let need = p.top_p * mass_union(nu, thr, row_max, lid);
        var tp = 0u;
        for (var bit = i32(p.bits) - 1i; bit >= 0i; bit--) {
          let cand = tp | (1u << u32(bit));
          if (mass_union(nu, max(cand, thr), row_max, lid) >= need) { tp = cand; }
        }
        thr = max(tp, thr);
      }
      token = draw_union(row, nu, thr, row_max, u, lid, row_arg);
    } else if (p.top_k == 0u && p.top_p >= 1.0) {
      // Every token is kept: draw a chunk by its mass, then the token inside it.
      if (lid == 0u) {
        chosen[1] = 0u;
        let goal = u * total;
        var acc = 0.0;
        var sel = NONE;
        for (var c = 0u; c < p.chunks; c++) {
          let mc = bitcast<f32>(work[stats + c * 4u + 1u]) *
                   exp(bitcast<f32>(work[stats + c * 4u]) - row_max);
          if (work[stats + c * 4u + 2u] != NONE && mc > 0.0) {
            if (sel == NONE && goal < acc + mc) {
              sel = c;
              target_mass = (goal - acc) / mc;
            }
            if (sel == NONE) { acc += mc; }
            chosen[1] = c; // the last chunk with mass, should rounding pass the end
          }
        }
        if (sel == NONE) {
          sel = chosen[1];
          target_mass = 1.0 - 1.0 / 16777216.0;
        }
        chosen[0] = sel;
      }
      let c = workgroupUniformLoad(&chosen[0]);
      let uc = workgroupUniformLoad(&target_mass);
      let lo = c * CHUNK;
      token = draw_row(base, lo, min(lo + CHUNK, p.vocab), 0u, row_max, uc, lid, row_arg);
    } else {
      // The whole row, bisection by bisection.
      var thr = 0u;
      if (p.top_k > 0u) {
        for (var bit = i32(p.bits) - 1i; bit >= 0i; bit--) {
          let cand = thr | (1u << u32(bit));
          if (mass_row(base, cand, row_max, lid, true) >= f32(p.top_k)) { thr = cand; }
        }
      }
      if (p.top_p < 1.0) {
        let need = p.top_p * mass_row(base, thr, row_max, lid, false);
        var tp = 0u;
        for (var bit = i32(p.bits) - 1i; bit >= 0i; bit--) {
          let cand = tp | (1u << u32(bit));
          if (mass_row(base, max(cand, thr), row_max, lid, false) >= need) { tp = cand; }
        }
        thr = max(tp, thr);
      }
      token = draw_row(base, 0u, p.vocab, thr, row_max, u, lid, row_arg);
    }
  }

  if (lid == 0u) {
    let out = row * p.stride + p.step;
    let done = finished[row] != 0u;
    var t = i32(token);
    var lp = z_at(base, token) - row_max - log(total);
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
