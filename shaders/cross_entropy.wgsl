// Cross-entropy of logits [N, V] against integer targets [N], fused with the log-softmax: the
// forward streams each row once for its (max, sum exp) and saves only the row's logsumexp, never
// the [N, V] probabilities. The backward recomputes softmax from the logits and that logsumexp.
//
// Targets equal to `ignore` contribute no loss and no gradient. Other targets outside [0, V) are
// clamped into range (a kernel cannot throw; the TS side checks targets that come from the CPU).
// The lse buffer has N + 1 entries: the last holds the scale of the reduction (1 / number of
// counted targets for "mean", 1 for "sum"), written by `finalize_main` for the backward.

#include "grid.wgsl"
#include "row_lse.wgsl"
#include "workgroup_sum.wgsl"

#const WG: u32

struct Params {
  rows: u32,
  cols: u32,
  ignore: i32,
  per_row: u32, // 1: reduction "none", the upstream gradient has one entry per row
  lowest: f32, // -inf, passed in because WGSL has no literal for it
  mean: u32,
  _p0: u32,
  _p1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read_write> lse: array<f32>;
@group(0) @binding(4) var<storage, read_write> loss: array<f32>;
@group(0) @binding(4) var<storage, read> g: array<f32>;
@group(0) @binding(5) var<storage, read_write> dx: array<f32>;

fn target_of(row: u32) -> u32 {
  return u32(clamp(targets[row], 0, i32(p.cols) - 1));
}

// Workgroup i handles row i: lse[row] and loss[row] (0 for ignored targets).
@compute @workgroup_size(WG)
fn forward_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) { return; } // uniform per workgroup: barriers stay valid
  let base = row * p.cols;
  var acc = vec2f(p.lowest, 0.0);
  for (var j = lid.x; j < p.cols; j += WG) {
    acc = lse_merge(acc, vec2f(x[base + j], 1.0), p.lowest);
  }
  let st = lse_tree(acc, lid.x, p.lowest);
  if (lid.x == 0u) {
    let l = st.x + log(st.y);
    lse[row] = l;
    let ignored = targets[row] == p.ignore;
    loss[row] = select(l - x[base + target_of(row)], 0.0, ignored);
  }
}

// One workgroup: the sum of the row losses, divided by the number of counted targets for "mean"
// (at least 1, so that a batch with every target ignored gives 0, not NaN). x holds the row
// losses here; the scale goes to lse[rows] for the backward.
@compute @workgroup_size(WG)
fn finalize_main(@builtin(local_invocation_id) lid: vec3u) {
  var total = 0.0;
  var count = 0.0;
  for (var r = lid.x; r < p.rows; r += WG) {
    total += x[r];
    count += select(1.0, 0.0, targets[r] == p.ignore);
  }
  let sum_total = wg_sum(total, lid.x);
  let sum_count = wg_sum(count, lid.x);
  if (lid.x == 0u) {
    let scale = select(1.0, 1.0 / max(sum_count, 1.0), p.mean == 1u);
    loss[0] = sum_total * scale;
    lse[p.rows] = scale;
  }
}

// dx[row, j] = scale * g * (softmax(x)[row, j] - [j == target]), 0 on ignored rows.
@compute @workgroup_size(WG)
fn backward_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  let gr = select(g[0] * lse[p.rows], g[row], p.per_row == 1u);
  let ignored = targets[row] == p.ignore;
  let t = target_of(row);
  let l = lse[row];
  for (var j = lid.x; j < p.cols; j += WG) {
    let onehot = select(0.0, 1.0, j == t);
    // select, not a multiply by 0: an ignored row may be all -inf (NaN logsumexp).
    dx[base + j] = select(gr * (exp(x[base + j] - l) - onehot), 0.0, ignored);
  }
}
