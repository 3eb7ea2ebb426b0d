// What the tiled attention kernels (attention_fwd, attention_bwd_dq, attention_bwd_dkv) share:
// the uniform block src/tensor/ops/attention.ts packs, the q / k / v / mask bindings at 1..4, the
// head size D and threads per row TPR (both given by the TS op), and loads of vec4 column groups.
// Tiles are vec4 arrays over column groups: fewer, wider workgroup loads, and CPU adapters compile
// the zero-initialisation of workgroup arrays far faster for fewer elements. Query rows are
// (query position, query head of the group) pairs flattened as rf = t * G + g.
//
// load_kv_tile needs the includer's WG (invocations per workgroup) and workgroup arrays ks, vs.

#include "attention_lse.wgsl"

#const D: u32
#const TPR: u32
const D4: u32 = (D + 3u) / 4u;
const NC: u32 = (D4 + TPR - 1u) / TPR; // column groups per thread

struct Params {
  batch: u32,
  t: u32,
  s: u32, // rows of the k/v buffer along dim 1
  l: u32, // valid keys (kvLength)
  hq: u32,
  hkv: u32,
  g: u32, // query heads per kv head
  off: i32, // position of query t in key space is off + t
  scale: f32,
  causal: u32,
  has_mask: u32,
  mask_stride: u32,
  rows: u32, // t * g
  nsplit: u32, // forward only: key-range splits (1 in the backward)
  chunk: u32, // forward only: keys per split, a multiple of BK
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<i32>;

// Offset in q / o / dO of query row rf of kv head hk in batch b.
fn q_base(b: u32, hk: u32, rf: u32) -> u32 {
  return ((b * p.t + rf / p.g) * p.hq + hk * p.g + rf % p.g) * D;
}

// Offset in k / v of key s of kv head hk in batch b.
fn kv_base(b: u32, hk: u32, s: u32) -> u32 {
  return ((b * p.s + s) * p.hkv + hk) * D;
}

// Columns 4 * c4 .. 4 * c4 + 3 of the row starting at `base`, zero past D.
fn q4(base: u32, c4: u32) -> vec4f {
  var x = vec4f();
  for (var e = 0u; e < 4u; e++) { if (4u * c4 + e < D) { x[e] = q[base + 4u * c4 + e]; } }
  return x;
}

fn k4(base: u32, c4: u32) -> vec4f {
  var x = vec4f();
  for (var e = 0u; e < 4u; e++) { if (4u * c4 + e < D) { x[e] = k[base + 4u * c4 + e]; } }
  return x;
}

fn v4(base: u32, c4: u32) -> vec4f {
  var x = vec4f();
  for (var e = 0u; e < 4u; e++) { if (4u * c4 + e < D) { x[e] = v[base + 4u * c4 + e]; } }
  return x;
}

fn key_ok(b: u32, s: u32) -> bool {
  if (s >= p.l) { return false; }
  return p.has_mask == 0u || mask[b * p.mask_stride + s] != 0;
}

// Keys s0 .. s0 + n - 1 of (b, hk) into ks / vs, zero past kvLength.
fn load_kv_tile(s0: u32, n: u32, b: u32, hk: u32, tid: u32) {
  for (var i = tid; i < n * D4; i += WG) {
    let s = s0 + i / D4;
    var kx = vec4f();
    var vx = vec4f();
    if (s < p.l) {
      let a = kv_base(b, hk, s);
      kx = k4(a, i % D4);
      vx = v4(a, i % D4);
    }
    ks[i] = kx;
    vs[i] = vx;
  }
}
