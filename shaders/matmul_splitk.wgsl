// Sums the split-K partial products of matmul.wgsl / matmul_skinny.wgsl: y[i] = sum_s
// part[s * size + i] (+ bias[i % n]) (+ resid[i], the linear layer's residual, added once here).
// y and resid may be wider than the partials' rows of n (a product's last columns, summed apart
// from the rest: matmul_tile.wgsl's n_off): their rows are ld apart.
// One invocation per output element, in a 1-D grid folded into 2-D (flat_index of grid.wgsl);
// the splits are summed in order, so the result does not depend on scheduling.

#include "grid.wgsl"
#include "split_total.wgsl"

#const WG: u32
alias BIAS_T = f32;

struct Params {
  size: u32, // M * N
  n: u32,
  splits: u32,
  ld: u32, // elements between rows of y and resid (n: contiguous)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>; // [splits, M, N]
@group(0) @binding(2) var<storage, read_write> y: array<f32>; // [M, N]
@group(0) @binding(3) var<storage, read> bias: array<BIAS_T>; // [N]
@group(0) @binding(4) var<storage, read> resid: array<f32>; // [M, N]

fn total(i: u32) -> f32 {
  return split_total(i, p.size, p.splits);
}

// Where element i of the [M, n] sum lies in y and resid.
fn at(i: u32) -> u32 {
  if (p.ld == p.n) { return i; }
  return i / p.n * p.ld + i % p.n;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.size) { y[at(i)] = total(i); }
}

@compute @workgroup_size(WG)
fn main_bias(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.size) { y[at(i)] = total(i) + f32(bias[i % p.n]); }
}

// Binding 3 (bias) is left unbound here.
@compute @workgroup_size(WG)
fn main_resid(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.size) { y[at(i)] = total(i) + resid[at(i)]; }
}

@compute @workgroup_size(WG)
fn main_bias_resid(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.size) { y[at(i)] = (total(i) + f32(bias[i % p.n])) + resid[at(i)]; }
}
