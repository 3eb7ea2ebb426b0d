// Moves rows of attention operands between the layout the `attention` op takes, [B, R, Hkv * G, D]
// (q, O, dO: R = T with G query heads per kv head; k, v: R = S with G = 1), and the one its GEMM
// path multiplies, [nb, G * n, D] over the (batch, kv head) pairs bh = c0 .. c0 + nb - 1 (bh =
// b * Hkv + hk): row g * n + r holds position r of head hk * G + g. `pack` reads positions r < n;
// `unpack` writes all R positions of its pairs, zero at r >= n (keys past kvLength), each the sum
// over `parts` partial results laid out [nb, parts, G * n, D] (the key side of the backward,
// computed per query head, sums its G heads here).
// Under f16 precision the values are rounded to halves both ways: `pack_half` stores an f16 tensor
// (two halves per word, element 2w in the low half of word w; the GEMM reads it with shader-f16),
// `pack` with ROUND an f32 one holding the same values (any adapter), and `unpack` with ROUND
// rounds each result (after summing its partials), as torch's fp16 attention returns halves.

#include "grid.wgsl"
#include "half_round.wgsl"

#const WG: u32
const ROUND: bool = false; // pack, unpack: round each value to the nearest half

struct Params {
  c0: u32,
  nb: u32,
  hkv: u32,
  g: u32,
  n: u32, // positions per head in the packed layout
  r: u32, // positions per head in the op layout (dim 1)
  d: u32,
  parts: u32, // unpack: partial results summed per element
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst_half: array<u32>; // pack_half

// Offset in the op layout of column `col` of position `r` of head hk * G + g of pair bh.
fn wide(bh: u32, g: u32, r: u32, col: u32) -> u32 {
  let b = bh / p.hkv;
  let hk = bh % p.hkv;
  return ((b * p.r + r) * p.hkv * p.g + hk * p.g + g) * p.d + col;
}

// Element i of the packed layout: row (j * G + g) * n + r, column i % D.
fn packed(i: u32) -> f32 {
  let row = i / p.d;
  let r = row % p.n;
  let jg = row / p.n;
  return src[wide(p.c0 + jg / p.g, jg % p.g, r, i % p.d)];
}

@compute @workgroup_size(WG)
fn pack(
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) nwg: vec3u,
  @builtin(local_invocation_id) lid: vec3u,
) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.nb * p.g * p.n * p.d) { return; }
  var x = packed(i);
  if (ROUND) { x = round_half(x); }
  dst[i] = x;
}

// One word (two packed elements) per invocation; past an odd count the high half is zero.
@compute @workgroup_size(WG)
fn pack_half(
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) nwg: vec3u,
  @builtin(local_invocation_id) lid: vec3u,
) {
  let w = flat_index(wid, nwg, lid);
  let count = p.nb * p.g * p.n * p.d;
  if (2u * w >= count) { return; }
  var hi = 0u;
  if (2u * w + 1u < count) { hi = half_bits(packed(2u * w + 1u)); }
  dst_half[w] = half_bits(packed(2u * w)) | (hi << 16u);
}

@compute @workgroup_size(WG)
fn unpack(
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) nwg: vec3u,
  @builtin(local_invocation_id) lid: vec3u,
) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.nb * p.r * p.g * p.d) { return; }
  // Walk the op layout of the pairs (contiguous over g and col) so the writes coalesce.
  let col = i % p.d;
  var x = i / p.d;
  let g = x % p.g;
  x /= p.g;
  let r = x % p.r;
  let j = x / p.r;
  var val = 0.0;
  if (r < p.n) {
    for (var q = 0u; q < p.parts; q++) {
      val += src[(((j * p.parts + q) * p.g + g) * p.n + r) * p.d + col];
    }
  }
  if (ROUND) { val = round_half(val); }
  dst[wide(p.c0 + j, g, r, col)] = val;
}
