// Batched tiled matmul: C[b] = op(A[b]) @ op(B[b]), op = optional transpose, f32 accumulation.
//   A stored [M, K] (TRANS_A = false) or [K, M]; B stored [K, N] (TRANS_B = false) or [N, K].
//   A batch stride of 0 shares one matrix across the batch (a linear layer's weight).
// Each workgroup computes a BM x BN block of C; each thread a TM x TN register tile made of
// vec4 columns. Tiles of A and B go through workgroup memory stored k-major as vec4s
// (As[k][m/4], Bs[k][n/4]) so the inner loop does one 16-byte shared load per 4 rows or columns.
// A thread's rows are the vec4 groups ty, ty + WG_Y, ... (not adjacent groups): the threads of a
// warp then read consecutive vec4s of Bs and broadcast vec4s of As, without bank conflicts.
// Rows of the shared tiles are padded by one vec4 so the transposing stores of a tile read
// along k do not all land in the same bank. Two shared buffers let the next tile's global
// loads (held in registers) overlap the current tile's math with one barrier per K step.
// Out-of-range elements load as 0 and are never stored, so any M, N, K is correct; a product
// whose M, N and K are multiples of the block's may load without those checks (EXACT_A / _B).
// Split-K (a single product with k_split < k): workgroup z takes the K slice
// [z * k_split, (z + 1) * k_split) and writes its own partial [M, N] at z * stride_c, which
// matmul_splitk.wgsl sums; a product of few blocks and a long K then fills the GPU.
// The linear layer's epilogue may add a bias[n] and a residual (same layout as C, a separate
// read-only binding: C itself is read_write and may not alias it): C = (op(A) @ op(B) + bias)
// + resid, in that order, which is bit-for-bit the unfused add(resid, linear(...)).
// Specialised through `defines`: tile sizes, transposes, storage types (f16 needs `enable f16`).
// This file holds the operands and their loads; the tile, stores and entry points are in
// include/matmul_tile.wgsl.

alias A_T = f32;
alias B_T = f32;
// What one array element of A / B holds: A_T, or vec4<A_T> when the tile reads vec4s (VEC_A).
alias A_V = f32;
alias B_V = f32;

struct Params {
  m: u32,
  n: u32,
  k: u32,
  stride_a: u32, // elements between batch entries (0 = shared)
  stride_b: u32,
  stride_c: u32,
  batch_offset: u32, // first batch entry of this dispatch (batches over 65535 are split)
  k_split: u32, // K per split; k_split >= k is an unsplit (batched) product
  causal_t: u32, // CAUSAL (matmul_tile.wgsl): query positions per head
  causal_off: i32, // and the last key position 0 sees
  m_off: u32, // first row and column of this dispatch's blocks (matmul_tile.wgsl)
  n_off: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<A_V>;
@group(0) @binding(2) var<storage, read> b: array<B_V>;

#include "matmul_load_a.wgsl"

// Element (kk, j) of op(B), 0 outside, as load_a reads A.
fn load_b(base: u32, kk: u32, j: u32, k_end: u32) -> f32 {
  let ok = EXACT_B || (j < p.n && kk < k_end);
  var idx = base + kk * p.n + j;
  if (TRANS_B) { idx = base + j * p.k + kk; }
  return select(0.0, b_at(select(0u, idx, ok)).x, ok);
}

// Four elements from (kk, j) along B's contiguous dimension, as load4_a reads A.
fn load4_b(base: u32, kk: u32, j: u32, k_end: u32) -> vec4<f32> {
  let ok = EXACT_B || (j < p.n && kk < k_end);
  var idx = base + kk * p.n + j;
  if (TRANS_B) { idx = base + j * p.k + kk; }
  return select(vec4<f32>(0.0), b_at(select(0u, idx / 4u, ok)), ok);
}

#include "matmul_tile.wgsl"
