// Elementary buffer ops the autograd core itself needs: fill, copy, y += a * x, y *= a.
// 1-D grids are folded into 2-D dispatches (flat_index of grid.wgsl).

#include "grid.wgsl"

#const WG: u32

struct Params {
  n: u32,
  a: f32,
  _p0: u32,
  _p1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG)
fn fill(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.n) { y[i] = p.a; }
}

@compute @workgroup_size(WG)
fn scale(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
         @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.n) { y[i] = y[i] * p.a; }
}
