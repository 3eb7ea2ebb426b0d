// IEEE halves to f32: x holds the halves two per word (pack2x16float order: element 2i in the low
// half of word i), as f16 tensors are stored on any adapter; out[2i], out[2i + 1] are word i's
// two values. Needs no shader-f16 (a KV cache of halves read by f32 kernels).
// 1-D grids fold into 2-D (flat_index of grid.wgsl).

#include "grid.wgsl"

#const WG: u32

struct Params {
  words: u32, // n / 2
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<vec2f>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.words) { out[i] = unpack2x16float(x[i]); }
}
