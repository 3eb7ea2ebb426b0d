// What every attention kernel over the (q, k, v, key mask) layout shares: the uniform block
// src/tensor/ops/attention.ts packs, the q and mask bindings (1 and 4; the includer declares k and
// v at 2 and 3 in its own element type), the head size D and index helpers. Query rows are
// (query position, query head of the group) pairs flattened as rf = t * G + g.

#include "attention_lse.wgsl"

#const D: u32
const D4: u32 = (D + 3u) / 4u;

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
  chunk: u32, // forward only: keys per split
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<i32>;

// Offset in q / o / dO of query row rf of kv head hk in batch b.
fn q_base(b: u32, hk: u32, rf: u32) -> u32 {
  return ((b * p.t + rf / p.g) * p.hq + hk * p.g + rf % p.g) * D;
}

// Offset in k / v (in elements) of key s of kv head hk in batch b.
fn kv_base(b: u32, hk: u32, s: u32) -> u32 {
  return ((b * p.s + s) * p.hkv + hk) * D;
}

// Columns 4 * c4 .. 4 * c4 + 3 of the row starting at `base`, zero past D.
fn q4(base: u32, c4: u32) -> vec4f {
  var x = vec4f();
  for (var e = 0u; e < 4u; e++) { if (4u * c4 + e < D) { x[e] = q[base + 4u * c4 + e]; } }
  return x;
}

fn key_ok(b: u32, s: u32) -> bool {
  if (s >= p.l) { return false; }
  return p.has_mask == 0u || mask[b * p.mask_stride + s] != 0;
}
