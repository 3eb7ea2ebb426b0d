// The tiled GEMM's loads of its A operand (include/matmul_tile.wgsl's load_a / load4_a), for
// includers whose `a` is one [M, K] (or, TRANS_A, [K, M]) matrix per batch entry: matmul.wgsl and
// matmul_swiglu.wgsl. The includer declares `p` with fields m and k, and `a`.

// Element (row i, depth kk) of op(A), 0 outside. Branch-free: the index is clamped to 0 and
// the value selected, which keeps the unrolled loads cheap to compile and to run.
fn load_a(base: u32, i: u32, kk: u32, k_end: u32) -> f32 {
  let ok = EXACT_A || (i < p.m && kk < k_end);
  var idx = base + i * p.k + kk;
  if (TRANS_A) { idx = base + kk * p.m + i; }
  return select(0.0, a_at(select(0u, idx, ok)).x, ok);
}

// Four elements from (i, kk) along A's contiguous dimension (matmul_tile.wgsl); the TS side
// makes that dimension, the batch stride and so every index here a multiple of 4.
fn load4_a(base: u32, i: u32, kk: u32, k_end: u32) -> vec4<f32> {
  let ok = EXACT_A || (i < p.m && kk < k_end);
  var idx = base + i * p.k + kk;
  if (TRANS_A) { idx = base + kk * p.m + i; }
  return select(vec4<f32>(0.0), a_at(select(0u, idx / 4u, ok)), ok);
}
