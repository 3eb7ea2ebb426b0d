// Row selection by an index list: out[m, :] = x[index[m], :], or zeros where index[m] < 0.
// Moves 32-bit words, so one kernel serves f32 and i32 tensors alike (0u is 0.0 and 0 both).
// Packing a padded batch [B * T, C] into its real tokens [N, C] and unpacking it back are both
// this gather, with the index of one direction and its inverse (-1 at pads) for the other.
// 1-D grids fold into 2-D (flat_index of grid.wgsl).

#include "grid.wgsl"

#const WG: u32

struct Params {
  rows: u32, // M: output rows (length of index)
  cols: u32, // C: 32-bit words per row
  src_rows: u32, // N: rows of x; an index >= N reads zeros too
  _p0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> index: array<i32>;
@group(0) @binding(2) var<storage, read> x: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(WG)
fn gather(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
          @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.rows * p.cols) {
    return;
  }
  let m = i / p.cols;
  let c = i % p.cols;
  let src = index[m];
  var v = 0u;
  if (src >= 0 && u32(src) < p.src_rows) {
    v = x[u32(src) * p.cols + c];
  }
  out[i] = v;
}
