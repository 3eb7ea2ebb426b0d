// What the GEMM path's row kernels (attention_gemm_softmax, attention_gemm_grad) share: the
// uniform block src/tensor/ops/attention_gemm_kernels.ts packs, the key padding mask (binding 4)
// and the visibility rule of the flash kernels. TPR invocations own one row of a score matrix
// [nb, G * T, L] of the pairs bh = c0 .. c0 + nb - 1 (bh = b * Hkv + hk), WG / TPR rows a
// workgroup; row g * T + t is query position t of head hk * G + g, so a pair's rows sit at
// bh * G * T in lse [B, Hq, T]. Rows of a few hundred keys took a workgroup of 128 each, with
// seven-level reductions; four to a workgroup, each has five (timings: src/tensor/ops/grid.ts).

#include "attention_lse.wgsl"
#include "grid.wgsl"

#const WG: u32
#const TPR: u32 // invocations per row, a power of two dividing WG
const RPW: u32 = WG / TPR; // rows per workgroup

struct Params {
  c0: u32,
  rows: u32, // nb * G * T
  t: u32,
  l: u32, // keys (columns)
  hkv: u32,
  g: u32,
  off: i32, // position of query t in key space is off + t
  scale: f32,
  causal: u32,
  has_mask: u32,
  mask_stride: u32,
  d: u32, // head size (the gradient kernel's delta)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(4) var<storage, read> mask: array<i32>;

var<workgroup> red_a: array<f32, WG>;
var<workgroup> red_b: array<f32, WG>;

struct Row {
  bh: u32,
  t: u32,
  g: u32,
  lse_at: u32, // index in lse [B, Hq, T]
  base: u32, // offset of the row in the score matrix
}

fn row_of(row: u32) -> Row {
  let gt = p.g * p.t;
  let rr = row % gt;
  return Row(p.c0 + row / gt, rr % p.t, rr / p.t, p.c0 * gt + row, row * p.l);
}

fn visible(r: Row, s: u32) -> bool {
  if (p.has_mask != 0u && mask[(r.bh / p.hkv) * p.mask_stride + s] == 0) { return false; }
  return p.causal == 0u || i32(s) <= p.off + i32(r.t);
}

// This invocation's row: the workgroup's rows are grid1d(rows, RPW)'s groups times RPW. A row past
// p.rows only takes part in the barriers.
fn row_index(wid: vec3u, nwg: vec3u, tid: u32) -> u32 {
  return flat_group(wid, nwg) * RPW + tid / TPR;
}

// The sum of x over the TPR invocations of this invocation's row (every invocation calls it).
fn row_sum(x: f32, tid: u32) -> f32 {
  let lane = tid % TPR;
  red_a[tid] = x;
  for (var w = TPR / 2u; w > 0u; w /= 2u) {
    workgroupBarrier();
    if (lane < w) { red_a[tid] += red_a[tid + w]; }
  }
  workgroupBarrier();
  let total = red_a[tid - lane];
  workgroupBarrier(); // red_a is free again
  return total;
}
