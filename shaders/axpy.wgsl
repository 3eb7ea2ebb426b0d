// y += a * x over n elements (gradient accumulation, SGD-like updates).

#include "grid.wgsl"

#const WG: u32

struct Params {
  n: u32,
  a: f32,
  _p0: u32,
  _p1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.n) { y[i] = y[i] + p.a * x[i]; }
}
