// Tiled matmul over two products joined along K, for a single product (no batch):
//   C = op(A) @ op(B) + scale2 * op(A2) @ op(B2) (+ bias[n]) (+ resid),
// op(A) [M, K1], op(B) [K1, N], op(A2) [M, K2], op(B2) [K2, N]: the product of [op(A) | op(A2)]
// and [op(B) ; scale2 op(B2)], K = K1 + K2, each operand with its own transposition and storage
// type. The K loop, tiles, split-K and epilogues are matmul.wgsl's (include/matmul_tile.wgsl);
// only the loads differ: depth kk < K1 reads A and B, depth kk >= K1 reads A2 and B2 at
// kk - K1 (B2 times scale2). A K step or a split may straddle the seam, and K1, K2 need not be
// multiples of the K step. A LoRA layer's forward is one such product,
// [x | x A^T] @ [W | s B]^T, and its input gradient another, [g | gl] @ [W ; A].

#const TRANS_A2: bool
#const TRANS_B2: bool
alias A_T = f32;
alias B_T = f32;
alias A2_T = f32;
alias B2_T = f32;
// What one array element holds: the type, or a vec4 of it when the tile reads vec4s (VEC_A for A
// and A2, VEC_B for B and B2; the TS side sets them where both of a pair are laid out alike).
alias A_V = f32;
alias B_V = f32;
alias A2_V = f32;
alias B2_V = f32;

struct Params {
  m: u32,
  n: u32,
  k: u32, // K1 + K2
  stride_a: u32, // unused (a single product), kept for the shared tile code
  stride_b: u32,
  stride_c: u32,
  batch_offset: u32,
  k_split: u32, // K per split; k_split >= k is an unsplit product
  k1: u32, // the seam: depths below it belong to the first product
  scale2: f32, // factor on op(B2)
  m_off: u32, // first row and column of this dispatch's blocks (matmul_tile.wgsl)
  n_off: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<A_V>;
@group(0) @binding(2) var<storage, read> b: array<B_V>;
@group(0) @binding(6) var<storage, read> a2: array<A2_V>;
@group(0) @binding(7) var<storage, read> b2: array<B2_V>;

// Array element e of A2 / B2 as f32s, as a_at / b_at (matmul_tile.wgsl) read A and B.
fn a2_at(e: u32) -> vec4<f32> {
  return vec4<f32>(vec4<A2_T>(a2[e]));
}

fn b2_at(e: u32) -> vec4<f32> {
  return vec4<f32>(vec4<B2_T>(b2[e]));
}

// Index of element (r, kk) of an operand with `rows` rows and depth `depth`, stored [rows, depth]
// (row-major along k) or, when `k_major`, [depth, rows].
fn at(r: u32, kk: u32, rows: u32, depth: u32, k_major: bool) -> u32 {
  return select(r * depth + kk, kk * rows + r, k_major);
}

// Element (row i, depth kk) of [op(A) | op(A2)], 0 outside (clamped index, selected value).
fn load_a(base: u32, i: u32, kk: u32, k_end: u32) -> f32 {
  let ok = EXACT_A || (i < p.m && kk < k_end);
  if (kk < p.k1) { return select(0.0, a_at(select(0u, at(i, kk, p.m, p.k1, TRANS_A), ok)).x, ok); }
  let idx = at(i, kk - p.k1, p.m, p.k - p.k1, TRANS_A2);
  return select(0.0, a2_at(select(0u, idx, ok)).x, ok);
}

// Element (depth kk, column j) of [op(B) ; scale2 op(B2)], 0 outside. B is [K, N] unless
// transposed, so its columns are the "rows" of `at`, stored k-major when not transposed.
fn load_b(base: u32, kk: u32, j: u32, k_end: u32) -> f32 {
  let ok = EXACT_B || (j < p.n && kk < k_end);
  if (kk < p.k1) { return select(0.0, b_at(select(0u, at(j, kk, p.n, p.k1, !TRANS_B), ok)).x, ok); }
  let idx = at(j, kk - p.k1, p.n, p.k - p.k1, !TRANS_B2);
  return select(0.0, p.scale2 * b2_at(select(0u, idx, ok)).x, ok);
}

// Four elements from (i, kk) along the contiguous dimension of A and A2 (matmul_tile.wgsl). The
// TS side makes K1, K2 (read along k) or M multiples of 4, so four k never straddle the seam.
fn load4_a(base: u32, i: u32, kk: u32, k_end: u32) -> vec4<f32> {
  let ok = EXACT_A || (i < p.m && kk < k_end);
  if (kk < p.k1) {
    return select(vec4<f32>(0.0), a_at(select(0u, at(i, kk, p.m, p.k1, TRANS_A) / 4u, ok)), ok);
  }
  let idx = at(i, kk - p.k1, p.m, p.k - p.k1, TRANS_A2) / 4u;
  return select(vec4<f32>(0.0), a2_at(select(0u, idx, ok)), ok);
}

fn load4_b(base: u32, kk: u32, j: u32, k_end: u32) -> vec4<f32> {
  let ok = EXACT_B || (j < p.n && kk < k_end);
  if (kk < p.k1) {
    return select(vec4<f32>(0.0), b_at(select(0u, at(j, kk, p.n, p.k1, !TRANS_B) / 4u, ok)), ok);
  }
  let idx = at(j, kk - p.k1, p.n, p.k - p.k1, !TRANS_B2) / 4u;
  return select(vec4<f32>(0.0), p.scale2 * b2_at(select(0u, idx, ok)), ok);
}

#include "matmul_tile.wgsl"
