// Fused log-softmax + gather + entropy over the vocabulary, one workgroup per row, ONE pass over
// the logits: each invocation folds its strided slice of the row into an online (m, s, t) state
// (online_lse.wgsl), then the workgroup merges the states. With x' = x / temperature:
//   lse = m + log s,  log p(target) = x'[target] - lse,  H = log s - t / s.
// The [N, V] probabilities never exist; the backward recomputes p = exp(x' - lse) per element.
// Row index = wid.y * nwg.x + wid.x so the grid can fold to 2-D; backward is a flat 1-D grid.

#include "grid.wgsl"
#include "logprob_params.wgsl"
#include "online_lse.wgsl"

#const WG: u32
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;

// forward: out [N] or [2, N] (row 0 log p, row 1 entropy); saved [2, N] (lse, entropy)
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> saved_out: array<f32>;

// backward: saved [2, N], gout [N] or [2, N] like out, dlogits [N, V]
@group(0) @binding(3) var<storage, read> saved: array<f32>;
@group(0) @binding(4) var<storage, read> gout: array<f32>;
@group(0) @binding(5) var<storage, read_write> dlogits: array<f32>;

var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_s: array<f32, WG>;
var<workgroup> red_t: array<f32, WG>;

@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
           @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  // Uniform per workgroup, so the barriers below stay in uniform control flow.
  if (row >= p.rows) {
    return;
  }
  let base = row * p.vocab;
  var st = Online(LOWEST, 0.0, 0.0);
  for (var v = lid.x; v < p.vocab; v += WG) {
    st = fold(st, logits[base + v] / p.temperature).st;
  }
  red_m[lid.x] = st.m;
  red_s[lid.x] = st.s;
  red_t[lid.x] = st.t;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k >> 1u) {
    if (lid.x < k) {
      let r = merge(Online(red_m[lid.x], red_s[lid.x], red_t[lid.x]),
                    Online(red_m[lid.x + k], red_s[lid.x + k], red_t[lid.x + k]));
      red_m[lid.x] = r.m;
      red_s[lid.x] = r.s;
      red_t[lid.x] = r.t;
    }
    workgroupBarrier();
  }
  if (lid.x == 0u) {
    let log_s = log(red_s[0]);
    let lse = red_m[0] + log_s;
    let tgt = targets[row];
    var lp = 0.0;
    if (tgt >= 0 && u32(tgt) < p.vocab) {
      lp = logits[base + u32(tgt)] / p.temperature - lse;
    } else if (tgt != -100) {
      // NaN, built at run time (Chrome rejects a constant NaN): a bad target is a bug upstream
      lp = bitcast<f32>(u32(tgt) | 0x7fc00000u);
    }
    out[row] = lp;
    saved_out[row] = lse;
    if (WITH_ENTROPY) {
      let h = log_s - red_t[0] / red_s[0];
      out[p.rows + row] = h;
      saved_out[p.rows + row] = h;
    }
  }
}

// d x_v = dlogit (online_lse.wgsl) / temperature, one element per invocation; ignored rows
// (target -100) take no log-prob gradient.
@compute @workgroup_size(WG)
fn backward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
            @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.rows * p.vocab) {
    return;
  }
  let row = i / p.vocab;
  let v = i - row * p.vocab;
  let logp = logits[i] / p.temperature - saved[row];
  let e = select(row, p.rows + row, WITH_ENTROPY); // the entropy's row of gout and saved, if any
  dlogits[i] = dlogit(logp, v, targets[row], gout[row], gout[e], saved[e]) / p.temperature;
}
