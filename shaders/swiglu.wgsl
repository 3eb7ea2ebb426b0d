// SwiGLU of a Qwen2/Llama MLP: out = silu(gate) * up, silu(g) = g * sigmoid(g).
// Backward: d_up = grad * silu(g); d_gate = grad * up * sigmoid(g) * (1 + g * (1 - sigmoid(g))).
// One invocation per element (flat_index of grid.wgsl).

#include "grid.wgsl"
#include "sigmoid.wgsl"

#const WG: u32

struct Params {
  n: u32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> gate: array<f32>;
@group(0) @binding(2) var<storage, read> up: array<f32>;
// forward
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
// backward
@group(0) @binding(3) var<storage, read> grad: array<f32>;
@group(0) @binding(4) var<storage, read_write> d_gate: array<f32>;
@group(0) @binding(5) var<storage, read_write> d_up: array<f32>;

@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
           @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.n) {
    return;
  }
  let g = gate[i];
  out[i] = g * sigmoid(g) * up[i];
}

@compute @workgroup_size(WG)
fn backward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
            @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.n) {
    return;
  }
  let g = gate[i];
  let s = sigmoid(g);
  let dy = grad[i];
  d_up[i] = dy * g * s;
  d_gate[i] = dy * up[i] * s * (1.0 + g * (1.0 - s));
}
