// GAE as a reverse scan, one invocation per sequence (rows are independent; a row of R tokens is
// a short serial loop, and B rows fill the machine). Same semantics as gaeScan in src/algos:
// masked positions (padding, tool output) neither update the carried next value nor the carried
// advantage, they repeat it:
//   valid t:  A = r_t + gamma * V_next - V_t + gamma * lam * A;  V_next = V_t
//   all t:    advantages_t = A;  returns_t = A + V_t
// Advantages are not whitened. One row per invocation (grid1d(rows, WG)).

#include "grid.wgsl"

#const WG: u32
alias MaskT = i32;

struct Params {
  rows: u32,
  cols: u32,
  gamma: f32,
  lam: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> rewards: array<f32>;
@group(0) @binding(2) var<storage, read> values: array<f32>;
@group(0) @binding(3) var<storage, read> mask: array<MaskT>;
@group(0) @binding(4) var<storage, read_write> advantages: array<f32>;
@group(0) @binding(5) var<storage, read_write> returns: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_index(wid, nwg, lid);
  if (row >= p.rows) {
    return;
  }
  let base = row * p.cols;
  var next_value = 0.0;
  var last_gae = 0.0;
  for (var k = 0u; k < p.cols; k++) {
    let t = base + p.cols - 1u - k;
    let v = values[t];
    if (mask[t] != MaskT(0)) {
      let delta = rewards[t] + p.gamma * next_value - v;
      last_gae = delta + p.gamma * p.lam * last_gae;
      next_value = v;
    }
    advantages[t] = last_gae;
    returns[t] = last_gae + v;
  }
}
