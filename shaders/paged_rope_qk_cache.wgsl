// rope_qk_cache.wgsl for a paged KV cache: q [B, 1, Hq, D] and k [B, 1, Hkv, D] rotated in place
// at each row's own position (same angle code and arithmetic as rope_qk.wgsl, so the values
// equal its outputs bit for bit), and the rotated k and the unchanged v [B, 1, Hkv, D] of row b
// written to key index length_b - 1 of that row, which lives at row (length_b - 1) % BS of block
// ids_b[(length_b - 1) / BS] in the pools [numBlocks, BS, Hkv, D]. The table holds per row
// [length (with the new token), block ids...] (p.stride values per row). One invocation per pair:
// per row, Hq heads of q, then Hkv heads of k (each also carrying the pair of v at the same place).
// PACKED pools hold IEEE halves, two per u32 (pack2x16float: element 2m in the low half): then
// one invocation takes two neighbouring pairs (d, d + 1), so that it owns whole words; D % 4 == 0.

#include "grid.wgsl"
#include "rope_angle.wgsl"
#include "rope_cache_write.wgsl"

#const WG: u32
#const PACKED: bool
#const FROM_SPLITS: bool // q, k and v from a split qkv_linear's partials (rope_cache_write.wgsl)
#const HAS_BIAS: bool // FROM_SPLITS with the three biases
alias BIAS_T = f32;

struct Params {
  n: u32, // B * (Hq + Hkv) * D/2 pairs (D/4 pairs of pairs when PACKED)
  hq: u32,
  hkv: u32,
  half: u32, // D / 2
  scale: f32,
  stride: u32, // 1 + W: table values per row
  bs: u32, // keys per block
  splits: u32, // FROM_SPLITS: the partials' splits
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(8) var<storage, read> table: array<i32>; // [B, stride]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.n) {
    return;
  }
  let it = rotate_invocation(i); // row = b
  if (it.h < p.hq) {
    return;
  }
  let b = it.row;
  let s = u32(table[b * p.stride] - 1);
  let blk = u32(table[b * p.stride + 1u + s / p.bs]);
  store_kv(((blk * p.bs + s % p.bs) * p.hkv + it.h - p.hq) * 2u * p.half + it.d, it.x, it.y);
}
