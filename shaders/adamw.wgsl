// One fused AdamW step on a parameter tensor (in place), with decoupled weight decay and bias
// correction. The gradient is multiplied by the clip scale read from the GPU (state[1] of the
// grad-norm output); a scale of 0 marks a non-finite norm and the update is skipped entirely.

#include "grid.wgsl"

#const WG: u32

struct Params {
  n: u32,
  lr: f32,
  beta1: f32,
  beta2: f32,
  eps: f32,
  weight_decay: f32,
  bias_c1: f32, // 1 - beta1^t
  bias_c2: f32, // 1 - beta2^t
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> param: array<f32>;
@group(0) @binding(2) var<storage, read> grad: array<f32>;
@group(0) @binding(3) var<storage, read_write> m: array<f32>;
@group(0) @binding(4) var<storage, read_write> v: array<f32>;
@group(0) @binding(5) var<storage, read> clip: array<f32>; // [norm, scale]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  let scale = clip[1];
  if (i >= p.n || !(scale > 0.0)) { return; }
  let g = grad[i] * scale;
  let mi = p.beta1 * m[i] + (1.0 - p.beta1) * g;
  let vi = p.beta2 * v[i] + (1.0 - p.beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  let mhat = mi / p.bias_c1;
  let vhat = vi / p.bias_c2;
  var w = param[i];
  w = w - p.lr * p.weight_decay * w;
  param[i] = w - p.lr * mhat / (sqrt(vhat) + p.eps);
}
