// Log-prob (and entropy, and Σπ²) of target tokens through the LM head, one vocabulary chunk at a
// time, so the [N, V] logits never exist. The TS op (src/tensor/ops/lm_head_logprob.ts) computes
// the [N, cols] logits of one chunk with a matmul, then:
//   chunk_forward  folds the chunk into a running per-row state [5, N]: the online (m, s, t) of
//                  online_lse.wgsl, s2 = Σ e^(2(x-m)) kept against the same max, plus x[target]
//                  once the target's chunk is seen; with x = logit / temperature.
//   finalize       lse = m + log s, log p = x[target] - lse, H = log s - t / s, Σπ² = s2 / s².
//   chunk_backward recomputes p = exp(x - lse) over a chunk and overwrites the chunk's logits with
//                  their gradient, dlogit (online_lse.wgsl) / temperature.
// Row index = wid.y * nwg.x + wid.x (grid1d folds to 2-D); chunk_backward is a flat 1-D grid.

#include "grid.wgsl"
#include "online_lse.wgsl"

#const WG: u32
const WITH_SPP: bool = false;

struct Params {
  rows: u32,
  cols: u32, // logits of this chunk per row
  offset: u32, // vocabulary index of the chunk's first column
  vocab: u32,
  temperature: f32,
  first: u32, // 1: the chunk starts the state
  _p0: u32,
  _p1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(2) var<storage, read> targets: array<i32>;

// chunk_forward: logits [N, cols], state [5, N]
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(3) var<storage, read_write> state: array<f32>;

// finalize: state [5, N] -> out [K, N] (log p, then H, then Σπ² as asked), saved [2, N] (lse, H)
@group(0) @binding(1) var<storage, read> state_in: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> saved: array<f32>;

// chunk_backward: the chunk's logits [N, cols], overwritten with their gradient; saved [2, N];
// gout [K, N] like out (row 0 log p, row 1 entropy; Σπ² takes no gradient)
@group(0) @binding(1) var<storage, read_write> zbuf: array<f32>;
@group(0) @binding(3) var<storage, read> saved_in: array<f32>;
@group(0) @binding(4) var<storage, read> gout: array<f32>;

// The online state with s2 = Σ e^(2(x-m)), relative to the same max m as o.
struct OnlineSpp {
  o: Online,
  s2: f32,
}

fn fold_spp(st: OnlineSpp, x: f32) -> OnlineSpp {
  let f = fold(st.o, x);
  var s2 = st.s2;
  if (WITH_SPP) {
    s2 = select(s2 + f.k * f.k, s2 * f.k * f.k + 1.0, x > st.o.m);
  }
  return OnlineSpp(f.st, s2);
}

fn merge_spp(a: OnlineSpp, b: OnlineSpp) -> OnlineSpp {
  let r = merge_scaled(a.o, b.o);
  var s2 = 0.0;
  if (WITH_SPP) {
    s2 = r.ea * r.ea * a.s2 + r.eb * r.eb * b.s2;
  }
  return OnlineSpp(r.st, s2);
}

var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_s: array<f32, WG>;
var<workgroup> red_t: array<f32, WG>;
var<workgroup> red_s2: array<f32, WG>;

// The workgroup tree reduction's slot i.
fn red_load(i: u32) -> OnlineSpp {
  return OnlineSpp(Online(red_m[i], red_s[i], red_t[i]), red_s2[i]);
}

fn red_store(i: u32, v: OnlineSpp) {
  red_m[i] = v.o.m;
  red_s[i] = v.o.s;
  red_t[i] = v.o.t;
  red_s2[i] = v.s2;
}

@compute @workgroup_size(WG)
fn chunk_forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  // Uniform per workgroup, so the barriers below stay in uniform control flow.
  if (row >= p.rows) {
    return;
  }
  let base = row * p.cols;
  var st = OnlineSpp(Online(LOWEST, 0.0, 0.0), 0.0);
  for (var v = lid.x; v < p.cols; v += WG) {
    st = fold_spp(st, logits[base + v] / p.temperature);
  }
  red_store(lid.x, st);
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k >> 1u) {
    if (lid.x < k) {
      red_store(lid.x, merge_spp(red_load(lid.x), red_load(lid.x + k)));
    }
    workgroupBarrier();
  }
  if (lid.x == 0u) {
    let n = p.rows;
    var acc = red_load(0u);
    if (p.first == 0u) {
      let prev = Online(state[row], state[n + row], state[2u * n + row]);
      acc = merge_spp(OnlineSpp(prev, state[3u * n + row]), acc);
    } else {
      state[4u * n + row] = 0.0;
    }
    state[row] = acc.o.m;
    state[n + row] = acc.o.s;
    state[2u * n + row] = acc.o.t;
    state[3u * n + row] = acc.s2;
    let tgt = targets[row];
    if (tgt >= 0 && u32(tgt) >= p.offset && u32(tgt) < p.offset + p.cols) {
      state[4u * n + row] = logits[base + u32(tgt) - p.offset] / p.temperature;
    }
  }
}

@compute @workgroup_size(WG)
fn finalize(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
            @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_index(wid, nwg, lid);
  let n = p.rows;
  if (row >= n) {
    return;
  }
  let m = state_in[row];
  let s = state_in[n + row];
  let log_s = log(s);
  let lse = m + log_s;
  let tgt = targets[row];
  var lp = 0.0;
  if (tgt >= 0 && u32(tgt) < p.vocab) {
    lp = state_in[4u * n + row] - lse;
  } else if (tgt != -100) {
    // NaN, built at run time (Chrome rejects a constant NaN): a bad target is a bug upstream
    lp = bitcast<f32>(u32(tgt) | 0x7fc00000u);
  }
  out[row] = lp;
  saved[row] = lse;
  var k = 1u;
  if (WITH_ENTROPY) {
    let h = log_s - state_in[2u * n + row] / s;
    out[n + row] = h;
    saved[n + row] = h;
    k = 2u;
  }
  if (WITH_SPP) {
    out[k * n + row] = state_in[3u * n + row] / (s * s);
  }
}

@compute @workgroup_size(WG)
fn chunk_backward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                  @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.rows * p.cols) {
    return;
  }
  let row = i / p.cols;
  let v = p.offset + (i - row * p.cols);
  let logp = zbuf[i] / p.temperature - saved_in[row];
  let e = select(row, p.rows + row, WITH_ENTROPY); // the entropy's row of gout and saved, if any
  zbuf[i] = dlogit(logp, v, targets[row], gout[row], gout[e], saved_in[e]) / p.temperature;
}
