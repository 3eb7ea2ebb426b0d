// The rotation and the cache store shared by rope_qk_cache.wgsl (contiguous cache) and
// paged_rope_qk_cache.wgsl (block pool): q and k rotated in place with rope_qk.wgsl's arithmetic,
// and a k head's rotated k with the unchanged v written to the cache as f32 bits or, PACKED, as
// IEEE halves two per u32 (element 2m in the low half).
// The includer declares PACKED and `p` with fields hq, hkv, half (D / 2) and scale.

@group(0) @binding(1) var<storage, read_write> q: array<f32>;
@group(0) @binding(2) var<storage, read_write> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> pos: array<i32>;
@group(0) @binding(5) var<storage, read> inv_freq: array<f32>;
@group(0) @binding(6) var<storage, read_write> k_cache: array<u32>;
@group(0) @binding(7) var<storage, read_write> v_cache: array<u32>;

// Rotates pair d of q or k head h of token row `row` in place; for a k head returns the rotated k
// pair and the v pair at the same place (k1, k2, v1, v2).
fn rotate_at(row: u32, h: u32, d: u32) -> vec4f {
  let cs = scaled_cos_sin(f32(pos[row]) * inv_freq[d], p.scale, 1.0);
  if (h < p.hq) {
    let base = (row * p.hq + h) * 2u * p.half + d;
    let r = rotate_pair(q[base], q[base + p.half], cs);
    q[base] = r.x;
    q[base + p.half] = r.y;
    return vec4f();
  }
  let base = (row * p.hkv + h - p.hq) * 2u * p.half + d;
  let rk = rotate_pair(k[base], k[base + p.half], cs);
  k[base] = rk.x;
  k[base + p.half] = rk.y;
  return vec4f(rk.x, rk.y, v[base], v[base + p.half]);
}

// Invocation i's work: one pair (d), or two neighbouring pairs (d, d + 1) when PACKED so that it
// owns whole words, of head h (q heads first, then k heads) of token row `row`; x and y are
// rotate_at's results for d and d + 1.
struct Rotated {
  row: u32,
  h: u32,
  d: u32,
  x: vec4f,
  y: vec4f,
}

fn rotate_invocation(i: u32) -> Rotated {
  let per_row = select(p.half, p.half / 2u, PACKED);
  let r = i / per_row;
  let heads = p.hq + p.hkv;
  var o: Rotated;
  o.d = (i % per_row) * select(1u, 2u, PACKED);
  o.row = r / heads;
  o.h = r % heads;
  o.x = rotate_at(o.row, o.h, o.d);
  if (PACKED) { o.y = rotate_at(o.row, o.h, o.d + 1u); }
  return o;
}

// Writes a k head's pairs (x, and y when PACKED) at element dst of the caches.
fn store_kv(dst: u32, x: vec4f, y: vec4f) {
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
