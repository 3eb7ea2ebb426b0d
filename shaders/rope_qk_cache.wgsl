// rope_qk.wgsl's rotation of q [B / r, T, Hq, D] and k [B / r, T, Hkv, D], in place, fused with
// kv_cache.wgsl's write: the rotated k and the unchanged v [B / r, T, Hkv, D] of source row s go
// to cache rows s * r .. s * r + r - 1 at time start + t of [B, Smax, Hkv, D] (r > 1 shares one
// prompt's prefill with its samples). Same angle code and arithmetic as rope_qk.wgsl, so the
// values equal its outputs bit for bit. One invocation per pair: per (s, t), Hq heads of q, then
// Hkv heads of k (each also carrying the pair of v at the same place).
// PACKED caches hold IEEE halves, two per u32 (pack2x16float: element 2m in the low half): then
// one invocation takes two neighbouring pairs (d, d + 1), so that it owns whole words; D % 4 == 0.
// Unpacked caches hold the f32 bits as they are.

#include "grid.wgsl"
#include "rope_angle.wgsl"
#include "rope_cache_write.wgsl"

#const WG: u32
#const PACKED: bool
#const FROM_SPLITS: bool // q, k and v from a split qkv_linear's partials (rope_cache_write.wgsl)
#const HAS_BIAS: bool // FROM_SPLITS with the three biases
alias BIAS_T = f32;

struct Params {
  n: u32, // B / r * T * (Hq + Hkv) * D/2 pairs (D/4 pairs of pairs when PACKED)
  hq: u32,
  hkv: u32,
  half: u32, // D / 2
  scale: f32,
  t_len: u32, // T
  s_max: u32,
  start: u32,
  repeat: u32, // r
  splits: u32, // FROM_SPLITS: the partials' splits
  _p2: u32,
  _p3: u32,
}

@group(0) @binding(0) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.n) {
    return;
  }
  let it = rotate_invocation(i); // row = (s, t)
  if (it.h < p.hq) {
    return;
  }
  let hk = it.h - p.hq;
  let src = it.row / p.t_len;
  let t = it.row % p.t_len;
  for (var j = 0u; j < p.repeat; j++) {
    let b = src * p.repeat + j;
    store_kv(((b * p.s_max + p.start + t) * p.hkv + hk) * 2u * p.half + it.d, it.x, it.y);
  }
}
