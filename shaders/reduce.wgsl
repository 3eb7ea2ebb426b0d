// Reductions over any set of axes of a contiguous f32 tensor.
//
// The TS side splits the input's dims into kept ("out") and reduced ("red") dims, merges
// neighbours of the same kind, and gives each its size and stride in the input. Workgroup w
// reduces chunk (w % K) of output element (w / K): with K > 1 the partial results go to an
// [outCount, K] buffer that a second dispatch reduces, so a few very long reductions still spread
// over many workgroups. Each workgroup strides over its chunk and ends with a tree in shared memory.

#include "grid.wgsl"

const OP: u32 = 0u; // 0 sum, 1 max
#const WG: u32

struct Params {
  out_count: u32,
  red_count: u32,
  chunk: u32,
  k: u32,
  scale: f32,
  out_rank: u32,
  red_rank: u32,
  lowest: f32, // -inf, passed in because WGSL has no literal for it
  out_dims: array<vec4u, 2>,
  out_strides: array<vec4u, 2>,
  red_dims: array<vec4u, 2>,
  red_strides: array<vec4u, 2>,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

var<workgroup> vals: array<f32, WG>;
var<workgroup> idxs: array<u32, WG>;

fn out_offset(o: u32) -> u32 {
  var rem = o;
  var off = 0u;
  for (var d = p.out_rank; d > 0u; d--) {
    let k = d - 1u;
    let size = p.out_dims[k >> 2u][k & 3u];
    off += (rem % size) * p.out_strides[k >> 2u][k & 3u];
    rem = rem / size;
  }
  return off;
}

fn red_offset(r: u32) -> u32 {
  // The usual case (one merged reduced block) needs no division.
  if (p.red_rank == 1u) { return r * p.red_strides[0].x; }
  var rem = r;
  var off = 0u;
  for (var d = p.red_rank; d > 0u; d--) {
    let k = d - 1u;
    let size = p.red_dims[k >> 2u][k & 3u];
    off += (rem % size) * p.red_strides[k >> 2u][k & 3u];
    rem = rem / size;
  }
  return off;
}

fn identity() -> f32 {
  if (OP == 0u) { return 0.0; }
  return p.lowest;
}

fn combine(u: f32, v: f32) -> f32 {
  if (OP == 0u) { return u + v; }
  return max(u, v);
}

@compute @workgroup_size(WG)
fn reduce_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_id) lid: vec3u) {
  let w = flat_group(wid, nwg);
  if (w >= p.out_count * p.k) { return; } // uniform per workgroup: barriers stay valid
  let o = w / p.k;
  let start = (w % p.k) * p.chunk;
  let end = min(start + p.chunk, p.red_count);
  let base = out_offset(o);
  var acc = identity();
  for (var r = start + lid.x; r < end; r += WG) {
    acc = combine(acc, x[base + red_offset(r)]);
  }
  vals[lid.x] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid.x < s) { vals[lid.x] = combine(vals[lid.x], vals[lid.x + s]); }
    workgroupBarrier();
  }
  if (lid.x == 0u) { out[w] = vals[0] * p.scale; }
}

// Gradient of max: the first (lowest reduced index) maximum of each output element gets g; dx is
// zeroed beforehand. The maximum and its index are recomputed, so nothing is saved by the forward.
@compute @workgroup_size(WG)
fn max_grad_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_id) lid: vec3u) {
  let o = flat_group(wid, nwg);
  if (o >= p.out_count) { return; }
  let base = out_offset(o);
  var best = identity();
  var at = 0xffffffffu;
  for (var r = lid.x; r < p.red_count; r += WG) {
    let v = x[base + red_offset(r)];
    if (v > best || (at == 0xffffffffu && v == best)) {
      best = v;
      at = r;
    }
  }
  vals[lid.x] = best;
  idxs[lid.x] = at;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid.x < s) {
      let v = vals[lid.x + s];
      let i = idxs[lid.x + s];
      let mine = vals[lid.x];
      if (v > mine || (v == mine && i < idxs[lid.x])) {
        vals[lid.x] = v;
        idxs[lid.x] = i;
      }
    }
    workgroupBarrier();
  }
  if (lid.x == 0u && idxs[0] != 0xffffffffu) { dx[base + red_offset(idxs[0])] = g[o]; }
}
