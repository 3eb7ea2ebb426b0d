// Global gradient norm without a readback: per-tensor partial sums of squares into one buffer,
// then a single workgroup sums the partials and writes [norm, clip scale].

#include "grad_norm_params.wgsl"
#include "grid.wgsl"
#include "workgroup_sum.wgsl"

#const WG: u32
#const PER_THREAD: u32

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> partials: array<f32>;

@compute @workgroup_size(WG)
fn sumsq(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
         @builtin(local_invocation_id) lid: vec3u) {
  let group = flat_group(wid, nwg);
  let base = group * WG * PER_THREAD + lid.x;
  var s = 0.0;
  for (var k = 0u; k < PER_THREAD; k++) {
    let i = base + k * WG;
    if (i < p.n) { let v = x[i]; s += v * v; }
  }
  let total = wg_sum(s, lid.x);
  if (lid.x == 0u) { partials[p.out_offset + group] = total; }
}
