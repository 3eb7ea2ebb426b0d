// The rotation and the cache store shared by rope_qk_cache.wgsl (contiguous cache) and
// paged_rope_qk_cache.wgsl (block pool): q and k rotated in place with rope_qk.wgsl's arithmetic,
// and a k head's rotated k with the unchanged v written to the cache as f32 bits or, PACKED, as
// IEEE halves two per u32 (element 2m in the low half).
// FROM_SPLITS: q, k and v are not read but made here from a split-K qkv_linear's partials
// (matmul_skinny_qkv.wgsl, `main_split`: part [splits, rows, Nq + Nk + Nv]), each element summed
// over its splits and given its bias as qkv_split_sum.wgsl does, so every output equals that pass
// followed by this one bit for bit; q, k (rotated) and v are written out too.
// The includer declares PACKED, FROM_SPLITS, HAS_BIAS, BIAS_T and `p` with fields n (the
// invocations), hq, hkv, half (D / 2), scale and splits (FROM_SPLITS).

@group(0) @binding(1) var<storage, read_write> q: array<f32>;
@group(0) @binding(2) var<storage, read_write> k: array<f32>;
#if FROM_SPLITS == false
@group(0) @binding(3) var<storage, read> v: array<f32>;
#endif
#if FROM_SPLITS == true
@group(0) @binding(3) var<storage, read_write> v: array<f32>;
@group(0) @binding(9) var<storage, read> part: array<f32>; // [splits, rows, Nq + Nk + Nv]
#endif
#if HAS_BIAS == true
@group(0) @binding(10) var<storage, read> bias_q: array<BIAS_T>;
@group(0) @binding(11) var<storage, read> bias_k: array<BIAS_T>;
@group(0) @binding(12) var<storage, read> bias_v: array<BIAS_T>;
#endif
@group(0) @binding(4) var<storage, read> pos: array<i32>;
@group(0) @binding(5) var<storage, read> inv_freq: array<f32>;
@group(0) @binding(6) var<storage, read_write> k_cache: array<u32>;
@group(0) @binding(7) var<storage, read_write> v_cache: array<u32>;

// The token rows of this dispatch.
fn rows() -> u32 {
  return p.n / (select(p.half, p.half / 2u, PACKED) * (p.hq + p.hkv));
}

#if FROM_SPLITS == true
fn load4(o: u32, i: vec4u) -> vec4f {
  return vec4f(part[o + i.x], part[o + i.y], part[o + i.z], part[o + i.w]);
}

// Elements i0 and i1 of the [rows, Nq + Nk + Nv] sums, each over its splits in split order as
// split_total.wgsl sums one; a round of four splits loads all 32 values before adding any.
fn split_sums8(i0: vec4u, i1: vec4u) -> array<vec4f, 2> {
  let size = rows() * (p.hq + 2u * p.hkv) * 2u * p.half;
  var s0 = vec4f(0.0);
  var s1 = vec4f(0.0);
  var z = 0u;
  for (; z + 4u <= p.splits; z += 4u) {
    let o = z * size;
    let a0 = load4(o, i0);
    let a1 = load4(o, i1);
    let b0 = load4(o + size, i0);
    let b1 = load4(o + size, i1);
    let c0 = load4(o + 2u * size, i0);
    let c1 = load4(o + 2u * size, i1);
    let d0 = load4(o + 3u * size, i0);
    let d1 = load4(o + 3u * size, i1);
    s0 = (((s0 + a0) + b0) + c0) + d0;
    s1 = (((s1 + a1) + b1) + c1) + d1;
  }
  for (; z < p.splits; z++) {
    s0 += load4(z * size, i0);
    s1 += load4(z * size, i1);
  }
  return array<vec4f, 2>(s0, s1);
}

// The biases of q (which 0), k (1) or v (2) at the four elements e (0 without biases).
fn biases4(which: u32, e: vec4u) -> vec4f {
  var b = vec4f(0.0);
#if HAS_BIAS == true
  for (var j = 0u; j < 4u; j++) {
    if (which == 0u) { b[j] = f32(bias_q[e[j]]); }
    if (which == 1u) { b[j] = f32(bias_k[e[j]]); }
    if (which == 2u) { b[j] = f32(bias_v[e[j]]); }
  }
#endif
  return b;
}
#endif

// The values of head h's pair d (and d + 1) of token row `row`: (x1, x2, v1, v2) for pair d in
// [0] and for d + 1 in [1] (PACKED), x the q or k pair and v the v pair beside a k head's. Read,
// or FROM_SPLITS summed over the splits plus their biases.
fn sources(row: u32, h: u32, d: u32) -> array<vec4f, 2> {
  let kh = h >= p.hq;
  let e = select(h, h - p.hq, kh) * 2u * p.half + d;
  let off = select(0u, 1u, PACKED); // the second pair: d + 1, or d again (unused)
#if FROM_SPLITS == false
  let base = row * select(p.hq, p.hkv, kh) * 2u * p.half + e;
  var o: array<vec4f, 2>;
  for (var j = 0u; j < 1u + off; j++) {
    let at = base + j;
    if (kh) {
      o[j] = vec4f(k[at], k[at + p.half], v[at], v[at + p.half]);
    } else {
      o[j] = vec4f(q[at], q[at + p.half], 0.0, 0.0);
    }
  }
  return o;
#endif
#if FROM_SPLITS == true
  let nq = p.hq * 2u * p.half;
  let nk = p.hkv * 2u * p.half;
  let first = row * (nq + 2u * nk) + select(0u, nq, kh);
  let cols = vec4u(e, e + p.half, e + off, e + off + p.half);
  // a q head's v columns repeat its own (loaded, not used)
  let vcols = select(cols, cols + vec4u(nk), kh);
  let s = split_sums8(cols + vec4u(first), vcols + vec4u(first));
  let x = s[0] + biases4(select(0u, 1u, kh), cols);
  let vv = s[1] + select(vec4f(0.0), biases4(2u, cols), kh);
  return array<vec4f, 2>(vec4f(x.x, x.y, vv.x, vv.y), vec4f(x.z, x.w, vv.z, vv.w));
#endif
}

// Rotates pair d of q or k head h of token row `row` (its values `s` from `sources`) in place;
// for a k head returns the rotated k pair and the v pair at the same place (k1, k2, v1, v2).
fn rotate_at(row: u32, h: u32, d: u32, s: vec4f) -> vec4f {
  let cs = scaled_cos_sin(f32(pos[row]) * inv_freq[d], p.scale, 1.0);
  if (h < p.hq) {
    let base = (row * p.hq + h) * 2u * p.half + d;
    let r = rotate_pair(s.x, s.y, cs);
    q[base] = r.x;
    q[base + p.half] = r.y;
    return vec4f();
  }
  let base = (row * p.hkv + h - p.hq) * 2u * p.half + d;
  let rk = rotate_pair(s.x, s.y, cs);
  k[base] = rk.x;
  k[base + p.half] = rk.y;
#if FROM_SPLITS == true
  v[base] = s.z;
  v[base + p.half] = s.w;
#endif
  return vec4f(rk.x, rk.y, s.z, s.w);
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
  let s = sources(o.row, o.h, o.d);
  o.x = rotate_at(o.row, o.h, o.d, s[0]);
  if (PACKED) { o.y = rotate_at(o.row, o.h, o.d + 1u, s[1]); }
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
