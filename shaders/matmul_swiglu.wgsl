// The first half of a SwiGLU MLP as one tiled GEMM (include/matmul_tile.wgsl), for more rows than
// the fused skinny kernel takes: y [M, N] = silu(x Wg^T + bg) * (x Wu^T + bu), x [M, K], Wg and
// Wu [N, K]. The two weights are read as one woven weight W' [N', K] whose rows alternate between
// them in groups of H = BN / 2 rows: W' rows [2 g H, 2 g H + H) are gate rows [g H, g H + H) and
// the next H are up's, N' = 2 H ceil(N / H). A thread's two column groups (j0 and j0 + BN / 2, the
// tile's TN = 8) then hold gate and up of the same four units, and `main_swiglu` writes the
// activation straight into y: one block grid over both weights, no second pass. Split K: `main`
// writes each split's W' sums into part [splits, M, N'] (the tile's split layout), which
// swiglu_split_sum.wgsl's `main_woven` sums in split order, adds the biases and activates.
// Every sum runs as the tiled GEMM's over x Wg^T and x Wu^T with the same tile and K slices, so
// y equals those products then swiglu.wgsl bit for bit.

alias A_T = f32;
alias B_T = f32;
alias A_V = f32;
alias B_V = f32;

struct Params {
  m: u32,
  n: u32, // N', the woven weight's rows
  k: u32,
  stride_a: u32, // single products only: unused
  stride_b: u32,
  stride_c: u32, // M N' between two splits' partials
  batch_offset: u32,
  k_split: u32,
  causal_t: u32, // CAUSAL = 0: unused
  causal_off: i32,
  m_off: u32, // OFFSETS = false: unused
  n_off: u32,
  units: u32, // N, the rows of each weight
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<A_V>; // x
@group(0) @binding(2) var<storage, read> b: array<B_V>; // Wg
@group(0) @binding(6) var<storage, read> b_up: array<B_V>; // Wu
@group(0) @binding(7) var<storage, read> bias_up: array<BIAS_T>; // bu (`bias`, binding 4: bg)

#include "matmul_load_a.wgsl"

// Row j of W': (its unit, 1 for up's rows). A tile's B slots hold whole row groups, so the
// weight a load reads is the same across a warp.
fn woven(j: u32) -> vec2<u32> {
  let h = BN / 2u;
  return vec2<u32>(j / BN * h + j % h, j / h % 2u);
}

// Array element e of Wg or Wu as f32s (a splat of one value, or one vec4), as b_at reads b.
fn w_at(up: bool, e: u32) -> vec4<f32> {
  if (up) { return vec4<f32>(vec4<B_T>(b_up[e])); }
  return b_at(e);
}

// Element (kk, j) of op(B) = W'^T: W' is read along k (TRANS_B).
fn load_b(base: u32, kk: u32, j: u32, k_end: u32) -> f32 {
  let w = woven(j);
  let ok = EXACT_B || (w.x < p.units && kk < k_end);
  return select(0.0, w_at(w.y == 1u, select(0u, w.x * p.k + kk, ok)).x, ok);
}

fn load4_b(base: u32, kk: u32, j: u32, k_end: u32) -> vec4<f32> {
  let w = woven(j);
  let ok = EXACT_B || (w.x < p.units && kk < k_end);
  return select(vec4<f32>(0.0), w_at(w.y == 1u, select(0u, (w.x * p.k + kk) / 4u, ok)), ok);
}

#include "matmul_tile.wgsl"
#include "sigmoid.wgsl"

// Row i of y at units u .. u + 3: silu(g) * v, g and v the gate and up sums with their biases.
fn store_units(i: u32, u: u32, g: vec4<f32>, v: vec4<f32>) {
  if (i >= p.m) { return; }
  let y4 = g * sigmoid4(g) * v;
  let at = i * p.units + u;
  if (u < p.units) { c[at] = y4.x; }
  if (u + 1u < p.units) { c[at + 1u] = y4.y; }
  if (u + 2u < p.units) { c[at + 2u] = y4.z; }
  if (u + 3u < p.units) { c[at + 3u] = y4.w; }
}

// This thread's outputs: acc[2 r] (gate) and acc[2 r + 1] (up) of row i0 + r, acc[8 + ...] of
// row i1 + r (matmul_tile.wgsl's layout, TN = 8).
fn store_swiglu(wid: vec3<u32>, lid: vec3<u32>, acc: array<vec4<f32>, 16>, bg: vec4<f32>,
                bu: vec4<f32>) {
  let i0 = wid.y * BM + lid.y * 4u;
  let i1 = i0 + WG_Y * 4u;
  let u = wid.x * (BN / 2u) + lid.x * 4u;
#unroll r 4
  store_units(i0 + $r, u, acc[2 * $r] + bg, acc[2 * $r + 1] + bu);
  if (RG > 1u) { store_units(i1 + $r, u, acc[8 + 2 * $r] + bg, acc[9 + 2 * $r] + bu); }
#end
}

@compute @workgroup_size(WG_X, WG_Y)
fn main_swiglu(@builtin(workgroup_id) wid: vec3<u32>,
               @builtin(local_invocation_id) lid: vec3<u32>) {
  store_swiglu(wid, lid, block(wid, lid), vec4<f32>(0.0), vec4<f32>(0.0));
}

// The biases at units u .. u + 3 (clamped reads; units past N are never stored).
fn unit_biases(u: u32) -> array<vec4<f32>, 2> {
  let last = p.units - 1u;
  var r: array<vec4<f32>, 2>;
#unroll j 4
  r[0][$j] = f32(bias[min(u + $j, last)]);
  r[1][$j] = f32(bias_up[min(u + $j, last)]);
#end
  return r;
}

@compute @workgroup_size(WG_X, WG_Y)
fn main_swiglu_bias(@builtin(workgroup_id) wid: vec3<u32>,
                    @builtin(local_invocation_id) lid: vec3<u32>) {
  let bs = unit_biases(wid.x * (BN / 2u) + lid.x * 4u);
  store_swiglu(wid, lid, block(wid, lid), bs[0], bs[1]);
}
