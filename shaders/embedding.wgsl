// Embedding gather and its deterministic scatter-add backward.
// Ids outside [0, vocab) are clamped to the nearest valid row, in the gather and the backward
// alike (the op validates ids that come from the CPU; ids made on the GPU are trusted).
//
// The backward must add the gradients of repeated ids. Instead of float atomics (whose order, and
// so whose rounding, changes from run to run) it links every position to the next position with
// the same id, then the first position of each id walks its chain and sums in position order:
//   link:    next[n] = first m > n with id[m] == id[n] (or rows); has_prev[next[n]] = 1
//   scatter: for each head n (has_prev[n] == 0) and column c: grad[id[n], c] = sum over the chain
// link costs O(rows^2) id comparisons in the worst case (all ids distinct), a few million for a
// micro-batch of several thousand tokens; the sums are O(rows * C) like the gather.
// 1-D grids fold into 2-D (flat_index of grid.wgsl).

#include "grid.wgsl"

alias T = f32; // the table's element type for gather (f16 when the adapter has shader-f16)

#const WG: u32

struct Params {
  rows: u32, // number of ids
  cols: u32, // C
  vocab: u32, // V
  _p0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ids: array<i32>;

// gather
@group(0) @binding(2) var<storage, read> table: array<T>;
@group(0) @binding(3) var<storage, read_write> out: array<T>;

// link
@group(0) @binding(2) var<storage, read_write> next_out: array<u32>;
@group(0) @binding(3) var<storage, read_write> has_prev_out: array<u32>; // zeroed by the caller

// scatter
@group(0) @binding(2) var<storage, read> next: array<u32>;
@group(0) @binding(3) var<storage, read> has_prev: array<u32>;
@group(0) @binding(4) var<storage, read> grad_out: array<f32>;
@group(0) @binding(5) var<storage, read_write> grad_table: array<f32>;

fn row_of(raw: i32) -> u32 {
  return u32(clamp(raw, 0, i32(p.vocab) - 1));
}

@compute @workgroup_size(WG)
fn gather(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
          @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.rows * p.cols) {
    return;
  }
  let n = i / p.cols;
  let c = i % p.cols;
  out[i] = table[row_of(ids[n]) * p.cols + c];
}

@compute @workgroup_size(WG)
fn link(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let n = flat_index(wid, nwg, lid);
  if (n >= p.rows) {
    return;
  }
  let v = row_of(ids[n]);
  var nx = p.rows;
  for (var m = n + 1u; m < p.rows; m++) {
    if (row_of(ids[m]) == v) {
      nx = m;
      break;
    }
  }
  next_out[n] = nx;
  // Each position is the next of at most one earlier position: a plain store cannot race.
  if (nx < p.rows) {
    has_prev_out[nx] = 1u;
  }
}

@compute @workgroup_size(WG)
fn scatter(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
           @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.rows * p.cols) {
    return;
  }
  let n = i / p.cols;
  if (has_prev[n] != 0u) {
    return;
  }
  let c = i % p.cols;
  var acc = 0.0;
  var k = n;
  loop {
    acc += grad_out[k * p.cols + c];
    k = next[k];
    if (k >= p.rows) {
      break;
    }
  }
  grad_table[row_of(ids[n]) * p.cols + c] = acc;
}
