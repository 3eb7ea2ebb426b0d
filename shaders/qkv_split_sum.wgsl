// Finishes a split-K qkv_linear (matmul_skinny_qkv.wgsl, `main_split`): the partials
// part [splits, M, Nq + Nk + Nv] hold q, k and v side by side; each output element is the sum of
// its splits, in order (the result does not depend on scheduling), plus its bias, written to q
// [M, Nq], k [M, Nk] or v [M, Nv]. One invocation per element of [M, Nq + Nk + Nv] (grid.wgsl).

#include "grid.wgsl"
#include "split_total.wgsl"

#const WG: u32
alias BIAS_T = f32;

struct Params {
  m: u32,
  nq: u32,
  nk: u32,
  nv: u32,
  splits: u32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read_write> yq: array<f32>;
@group(0) @binding(3) var<storage, read_write> yk: array<f32>;
@group(0) @binding(4) var<storage, read_write> yv: array<f32>;
@group(0) @binding(5) var<storage, read> bias_q: array<BIAS_T>;
@group(0) @binding(6) var<storage, read> bias_k: array<BIAS_T>;
@group(0) @binding(7) var<storage, read> bias_v: array<BIAS_T>;

fn width() -> u32 {
  return p.nq + p.nk + p.nv;
}

// Element i of [M, Nq + Nk + Nv] goes to q, k or v by its column j; `b` is its bias (or 0).
fn put(i: u32, b: f32) {
  let m = i / width();
  let j = i % width();
  let s = split_total(i, p.m * width(), p.splits) + b;
  if (j < p.nq) {
    yq[m * p.nq + j] = s;
  } else if (j < p.nq + p.nk) {
    yk[m * p.nk + j - p.nq] = s;
  } else {
    yv[m * p.nv + j - p.nq - p.nk] = s;
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.m * width()) { put(i, 0.0); }
}

// The bias of element i's column. Only main_bias reads them: `main`'s auto layout must not
// require the bindings.
fn bias_at(i: u32) -> f32 {
  let j = i % width();
  if (j < p.nq) { return f32(bias_q[j]); }
  if (j < p.nq + p.nk) { return f32(bias_k[j - p.nq]); }
  return f32(bias_v[j - p.nq - p.nk]);
}

@compute @workgroup_size(WG)
fn main_bias(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.m * width()) { put(i, bias_at(i)); }
}
