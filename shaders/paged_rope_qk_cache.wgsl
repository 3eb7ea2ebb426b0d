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

#const WG: u32
#const PACKED: bool

struct Params {
  n: u32, // B * (Hq + Hkv) * D/2 pairs (D/4 pairs of pairs when PACKED)
  hq: u32,
  hkv: u32,
  half: u32, // D / 2
  scale: f32,
  stride: u32, // 1 + W: table values per row
  bs: u32, // keys per block
  _p0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> q: array<f32>;
@group(0) @binding(2) var<storage, read_write> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> pos: array<i32>;
@group(0) @binding(5) var<storage, read> inv_freq: array<f32>;
@group(0) @binding(6) var<storage, read_write> k_cache: array<u32>;
@group(0) @binding(7) var<storage, read_write> v_cache: array<u32>;
@group(0) @binding(8) var<storage, read> table: array<i32>; // [B, stride]

// Rotates pair d of q or k head h of row b in place; for a k head returns the rotated k pair and
// the v pair at the same place (k1, k2, v1, v2).
fn rotate_at(b: u32, h: u32, d: u32) -> vec4f {
  let cs = scaled_cos_sin(f32(pos[b]) * inv_freq[d], p.scale, 1.0);
  if (h < p.hq) {
    let base = (b * p.hq + h) * 2u * p.half + d;
    let r = rotate_pair(q[base], q[base + p.half], cs);
    q[base] = r.x;
    q[base + p.half] = r.y;
    return vec4f();
  }
  let base = (b * p.hkv + h - p.hq) * 2u * p.half + d;
  let rk = rotate_pair(k[base], k[base + p.half], cs);
  k[base] = rk.x;
  k[base + p.half] = rk.y;
  return vec4f(rk.x, rk.y, v[base], v[base + p.half]);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.n) {
    return;
  }
  let per_row = select(p.half, p.half / 2u, PACKED);
  let row = i / per_row; // (b, head of q or k)
  let d = (i % per_row) * select(1u, 2u, PACKED);
  let heads = p.hq + p.hkv;
  let b = row / heads;
  let h = row % heads;
  let x = rotate_at(b, h, d);
  var y = vec4f();
  if (PACKED) { y = rotate_at(b, h, d + 1u); }
  if (h < p.hq) {
    return;
  }
  let hk = h - p.hq;
  let s = u32(table[b * p.stride] - 1);
  let blk = u32(table[b * p.stride + 1u + s / p.bs]);
  let dst = ((blk * p.bs + s % p.bs) * p.hkv + hk) * 2u * p.half + d;
  if (PACKED) {
    k_cache[dst / 2u] = pack2x16float(vec2f(x.x, y.x));
    k_cache[(dst + p.half) / 2u] = pack2x16float(vec2f(x.y, y.y));
    v_cache[dst / 2u] = pack2x16float(vec2f(x.z, y.z));
    v_cache[(dst + p.half) / 2u] = pack2x16float(vec2f(x.w, y.w));
  } else {
    k_cache[dst] = bitcast<u32>(x.x);
    k_cache[dst + p.half] = bitcast<u32>(x.y);
    v_cache[dst] = bitcast<u32>(x.z);
    v_cache[dst + p.half] = bitcast<u32>(x.w);
  }
}
