// Clipped value loss of the critic (src/algos/value_loss.ts), same structure as ppo_loss.wgsl:
//   value_rows: per valid token  v_clip = clamp(v, old - c, old + c)
//     l = max((v - R)^2, (v_clip - R)^2);  partials [B, 2] vec4: (count, l / 2, clipped, v), 0
//   ppo_loss_finish.wgsl aggregates (vf_loss = agg(l) / 2, vf_clipfrac, vpred_mean).
//   value_grad: d loss / d v = g_loss w_row (v - R) on the unclipped branch, else 0 (the clipped
//   term wins only when v is outside the clip range, where it does not depend on v); w_row is
//   the first entry of the finish pass's row_w [B] vec4 (the weight of column 1, the loss).

#include "grid.wgsl"

#const WG: u32
alias MaskT = i32;

struct Params {
  rows: u32,
  cols: u32,
  clip: f32,
  _p0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> vpred: array<f32>;
@group(0) @binding(2) var<storage, read> old_v: array<f32>;
@group(0) @binding(3) var<storage, read> returns: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<MaskT>;

// value_rows
@group(0) @binding(5) var<storage, read_write> partials: array<vec4<f32>>;

// value_grad
@group(0) @binding(5) var<storage, read> row_w: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> g_loss: array<f32>;
@group(0) @binding(7) var<storage, read_write> g_v: array<f32>;

var<workgroup> red: array<vec4<f32>, WG>;

// (loss term, 1 when the clipped term is strictly larger)
fn v_token(i: u32) -> vec2<f32> {
  let v = vpred[i];
  let r = returns[i];
  let v_clip = max(min(v, old_v[i] + p.clip), old_v[i] - p.clip);
  let l1 = (v - r) * (v - r);
  let l2 = (v_clip - r) * (v_clip - r);
  return select(vec2<f32>(l1, 0.0), vec2<f32>(l2, 1.0), l2 > l1);
}

@compute @workgroup_size(WG)
fn value_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) {
    return;
  }
  var acc = vec4<f32>(0.0);
  for (var c = lid.x; c < p.cols; c += WG) {
    let i = row * p.cols + c;
    if (mask[i] != MaskT(0)) {
      let t = v_token(i);
      acc += vec4<f32>(1.0, 0.5 * t.x, t.y, vpred[i]);
    }
  }
  red[lid.x] = acc;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k >> 1u) {
    if (lid.x < k) {
      red[lid.x] = red[lid.x] + red[lid.x + k];
    }
    workgroupBarrier();
  }
  if (lid.x == 0u) {
    partials[2u * row] = red[0];
    partials[2u * row + 1u] = vec4<f32>(0.0);
  }
}

@compute @workgroup_size(WG)
fn value_grad(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.rows * p.cols) {
    return;
  }
  var g = 0.0;
  if (mask[i] != MaskT(0) && v_token(i).y == 0.0) {
    g = g_loss[0] * row_w[i / p.cols].x * (vpred[i] - returns[i]);
  }
  g_v[i] = g;
}
