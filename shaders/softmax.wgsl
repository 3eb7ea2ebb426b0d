// Softmax and log-softmax over the last axis, one workgroup per row. The row is streamed in a
// loop (rows may be a whole vocabulary, 151936 wide): a first pass keeps a running maximum and
// the sum of exp(x - max) per thread (rescaled when the maximum grows), a tree merges the
// threads, a second pass writes the result. -inf entries (masked logits) contribute nothing.
//
// Backward entries take the forward output y and the upstream gradient g:
//   softmax:     dx = y * (g - sum(g * y))
//   log-softmax: dx = g - exp(y) * sum(g)

#include "grid.wgsl"
#include "row_lse.wgsl"
#include "workgroup_sum.wgsl"

#const WG: u32

struct Params {
  rows: u32,
  cols: u32,
  lowest: f32, // -inf, passed in because WGSL has no literal for it
  _p0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

// (max, sum of exp(x - max)) of the row starting at base, the same in every thread.
fn row_stats(base: u32, lid: u32) -> vec2f {
  var acc = vec2f(p.lowest, 0.0);
  for (var j = lid; j < p.cols; j += WG) {
    acc = lse_merge(acc, vec2f(x[base + j], 1.0), p.lowest);
  }
  return lse_tree(acc, lid, p.lowest);
}

@compute @workgroup_size(WG)
fn softmax_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) { return; } // uniform per workgroup: barriers stay valid
  let base = row * p.cols;
  let st = row_stats(base, lid.x);
  let inv = 1.0 / st.y;
  for (var j = lid.x; j < p.cols; j += WG) {
    out[base + j] = exp(x[base + j] - st.x) * inv;
  }
}

@compute @workgroup_size(WG)
fn log_softmax_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                    @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  let st = row_stats(base, lid.x);
  let lse = st.x + log(st.y);
  for (var j = lid.x; j < p.cols; j += WG) {
    out[base + j] = x[base + j] - lse;
  }
}

// x holds the forward output y here.
@compute @workgroup_size(WG)
fn softmax_grad_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                     @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var acc = 0.0;
  for (var j = lid.x; j < p.cols; j += WG) {
    acc += g[base + j] * x[base + j];
  }
  let d = wg_sum(acc, lid.x);
  for (var j = lid.x; j < p.cols; j += WG) {
    dx[base + j] = x[base + j] * (g[base + j] - d);
  }
}

@compute @workgroup_size(WG)
fn log_softmax_grad_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                         @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var acc = 0.0;
  for (var j = lid.x; j < p.cols; j += WG) {
    acc += g[base + j];
  }
  let total = wg_sum(acc, lid.x);
  for (var j = lid.x; j < p.cols; j += WG) {
    dx[base + j] = g[base + j] - exp(x[base + j]) * total;
  }
}
