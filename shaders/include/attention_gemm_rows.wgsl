// What the GEMM path's row kernels (attention_gemm_softmax, attention_gemm_grad) share: the
// uniform block src/tensor/ops/attention_gemm_kernels.ts packs, the key padding mask (binding 4)
// and the visibility rule of the flash kernels. One workgroup owns one row of a score matrix
// [nb, G * T, L] of the pairs bh = c0 .. c0 + nb - 1 (bh = b * Hkv + hk); row g * T + t is query
// position t of head hk * G + g, so a pair's rows sit at bh * G * T in lse [B, Hq, T].

#include "attention_lse.wgsl"
#include "grid.wgsl"

#const WG: u32

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
