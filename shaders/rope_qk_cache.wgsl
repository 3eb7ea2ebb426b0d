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

#const WG: u32
#const PACKED: bool

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
  _p1: u32,
  _p2: u32,
  _p3: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> q: array<f32>;
@group(0) @binding(2) var<storage, read_write> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> pos: array<i32>;
@group(0) @binding(5) var<storage, read> inv_freq: array<f32>;
@group(0) @binding(6) var<storage, read_write> k_cache: array<u32>;
@group(0) @binding(7) var<storage, read_write> v_cache: array<u32>;

// Rotates pair d of q or k head h of (s, t) = bt in place; for a k head returns the rotated k
// pair and the v pair at the same place (k1, k2, v1, v2).
fn rotate_at(bt: u32, h: u32, d: u32) -> vec4f {
  let cs = scaled_cos_sin(f32(pos[bt]) * inv_freq[d], p.scale, 1.0);
  if (h < p.hq) {
    let base = (bt * p.hq + h) * 2u * p.half + d;
    let r = rotate_pair(q[base], q[base + p.half], cs);
    q[base] = r.x;
    q[base + p.half] = r.y;
    return vec4f();
  }
  let base = (bt * p.hkv + h - p.hq) * 2u * p.half + d;
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
  let row = i / per_row; // (s, t, head of q or k)
  let d = (i % per_row) * select(1u, 2u, PACKED);
  let heads = p.hq + p.hkv;
  let bt = row / heads;
  let h = row % heads;
  let x = rotate_at(bt, h, d);
  var y = vec4f();
  if (PACKED) { y = rotate_at(bt, h, d + 1u); }
  if (h < p.hq) {
    return;
  }
  let hk = h - p.hq;
  let src = bt / p.t_len;
  let t = bt % p.t_len;
  for (var j = 0u; j < p.repeat; j++) {
    let b = src * p.repeat + j;
    let dst = ((b * p.s_max + p.start + t) * p.hkv + hk) * 2u * p.half + d;
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
}
