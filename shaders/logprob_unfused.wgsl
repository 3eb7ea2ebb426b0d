// The unfused baseline the fused logprob kernel is measured against: a plain log-softmax that
// writes [N, V] (three passes over each row: max, sum of exp, write), then a gather of the target
// column and, for the entropy, one more pass over the written log-probabilities. One workgroup per
// row (row = wid.y * nwg.x + wid.x).

#include "grid.wgsl"
#include "logprob_params.wgsl"
#include "workgroup_sum.wgsl"

#const WG: u32

// log_softmax
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> lsm_out: array<f32>;

// gather and entropy: lsm at 1
@group(0) @binding(1) var<storage, read> lsm: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read_write> picked: array<f32>;
@group(0) @binding(2) var<storage, read_write> ent_out: array<f32>;

@compute @workgroup_size(WG)
fn log_softmax(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) {
    return;
  }
  let base = row * p.vocab;
  var m = -3.0e38;
  for (var v = lid.x; v < p.vocab; v += WG) {
    m = max(m, logits[base + v] / p.temperature);
  }
  m = wg_max(m, lid.x);
  var s = 0.0;
  for (var v = lid.x; v < p.vocab; v += WG) {
    s += exp(logits[base + v] / p.temperature - m);
  }
  let lse = m + log(wg_sum(s, lid.x));
  for (var v = lid.x; v < p.vocab; v += WG) {
    lsm_out[base + v] = logits[base + v] / p.temperature - lse;
  }
}

// One invocation per row; -100 (or any out-of-range target) gives 0.
@compute @workgroup_size(WG)
fn gather(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
          @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_index(wid, nwg, lid);
  if (row >= p.rows) {
    return;
  }
  let t = targets[row];
  var v = 0.0;
  if (t >= 0 && u32(t) < p.vocab) {
    v = lsm[row * p.vocab + u32(t)];
  }
  picked[row] = v;
}

// H = -sum exp(l) l over a written log-softmax row.
@compute @workgroup_size(WG)
fn entropy(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
           @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) {
    return;
  }
  let base = row * p.vocab;
  var h = 0.0;
  for (var v = lid.x; v < p.vocab; v += WG) {
    let l = lsm[base + v];
    h -= exp(l) * l;
  }
  h = wg_sum(h, lid.x);
  if (lid.x == 0u) {
    ent_out[row] = h;
  }
}
