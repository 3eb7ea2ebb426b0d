// Finishes a split-K swiglu_linear (matmul_skinny_swiglu.wgsl, `main_split`): the partials
// part [splits, 2, M, N] hold each split's gate and up sums; y[i] = silu(g) * u with g and u the
// sums of their splits, in order (the result does not depend on scheduling), plus their biases.
// `main_pair*`: the gate and up products ran apart (split-K tiled GEMMs, swiglu_split.ts), their
// partials in part and part_up, each [splits, M, N]; the sums equal matmul_splitk.wgsl's, so y
// equals those two sums then swiglu.wgsl bit for bit. `main_woven*`: one woven product
// (matmul_swiglu.wgsl) wrote both into part [splits, M, N'], gate's unit u at column
// u / H * 2H + u % H and up's H columns further (H = `half`, N' = 2H ceil(N / H)).
// One invocation per element of y [M, N] (grid.wgsl).

#include "grid.wgsl"
#include "sigmoid.wgsl"

#const WG: u32
alias BIAS_T = f32;

struct Params {
  size: u32, // M * N
  n: u32,
  splits: u32,
  half: u32, // main_woven*: H
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read> bias_g: array<BIAS_T>;
@group(0) @binding(4) var<storage, read> bias_u: array<BIAS_T>;
@group(0) @binding(5) var<storage, read> part_up: array<f32>; // main_pair*

// (gate, up) of element i, summed over the splits.
// Two splits loaded per round, then added in split order (as matmul_splitk.wgsl).
fn sums(i: u32) -> vec2<f32> {
  var s = vec2<f32>(0.0);
  var z = 0u;
  for (; z + 2u <= p.splits; z += 2u) {
    let at = z * 2u * p.size + i;
    let a = vec2<f32>(part[at], part[at + p.size]);
    let b = vec2<f32>(part[at + 2u * p.size], part[at + 3u * p.size]);
    s = (s + a) + b;
  }
  if (z < p.splits) {
    let at = z * 2u * p.size + i;
    s += vec2<f32>(part[at], part[at + p.size]);
  }
  return s;
}

// y[i] = silu(g) * u for s = (g, u).
fn activate(i: u32, s: vec2<f32>) {
  y[i] = s.x * sigmoid(s.x) * s.y;
}

// Element i's sums plus `b`, its column's (gate, up) biases, activated.
fn finish(i: u32, b: vec2<f32>) {
  activate(i, sums(i) + b);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.size) { finish(i, vec2<f32>(0.0)); }
}

// The gate and up biases of element i's column. Only main_bias reads them: `main`'s auto layout
// must not require the bindings.
fn biases(i: u32) -> vec2<f32> {
  let j = i % p.n;
  return vec2<f32>(f32(bias_g[j]), f32(bias_u[j]));
}

@compute @workgroup_size(WG)
fn main_bias(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.size) { finish(i, biases(i)); }
}

// (gate, up) of element i from the two products' partials, summed in split order, four splits
// loaded per round.
fn pair_sums(i: u32) -> vec2<f32> {
  let n = p.size;
  var s = vec2<f32>(0.0);
  var z = 0u;
  for (; z + 4u <= p.splits; z += 4u) {
    let o = z * n + i;
    let a = vec2<f32>(part[o], part_up[o]);
    let b = vec2<f32>(part[o + n], part_up[o + n]);
    let c = vec2<f32>(part[o + 2u * n], part_up[o + 2u * n]);
    let d = vec2<f32>(part[o + 3u * n], part_up[o + 3u * n]);
    s = (((s + a) + b) + c) + d;
  }
  for (; z < p.splits; z++) { s += vec2<f32>(part[z * n + i], part_up[z * n + i]); }
  return s;
}

// Binding 3 and 4 (the biases) are left unbound here.
@compute @workgroup_size(WG)
fn main_pair(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.size) { activate(i, pair_sums(i)); }
}

@compute @workgroup_size(WG)
fn main_pair_bias(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.size) { activate(i, pair_sums(i) + biases(i)); }
}

// (gate, up) of element i from a woven product's partials, summed in split order as `pair_sums`.
fn woven_sums(i: u32) -> vec2<f32> {
  let h = p.half;
  let wide = (p.n + h - 1u) / h * 2u * h; // N'
  let u = i % p.n;
  let at = i / p.n * wide + u / h * 2u * h + u % h;
  let n = p.size / p.n * wide; // M N': one split's partials
  var s = vec2<f32>(0.0);
  var z = 0u;
  for (; z + 4u <= p.splits; z += 4u) {
    let o = z * n + at;
    let a = vec2<f32>(part[o], part[o + h]);
    let b = vec2<f32>(part[o + n], part[o + n + h]);
    let c = vec2<f32>(part[o + 2u * n], part[o + 2u * n + h]);
    let d = vec2<f32>(part[o + 3u * n], part[o + 3u * n + h]);
    s = (((s + a) + b) + c) + d;
  }
  for (; z < p.splits; z++) { s += vec2<f32>(part[z * n + at], part[z * n + at + h]); }
  return s;
}

@compute @workgroup_size(WG)
fn main_woven(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.size) { activate(i, woven_sums(i)); }
}

@compute @workgroup_size(WG)
fn main_woven_bias(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = flat_index(wid, nwg, lid);
  if (i < p.size) { activate(i, woven_sums(i) + biases(i)); }
}
