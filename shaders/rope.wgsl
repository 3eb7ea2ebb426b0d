// Rotary position embedding with Hugging Face's rotate_half layout: dimension i is paired with
// i + D/2 (not interleaved). For x [B, T, H, D] and integer positions [B, T]:
//   out[i]       = x[i] * cos(a_i) - x[i + D/2] * sin(a_i)
//   out[i + D/2] = x[i + D/2] * cos(a_i) + x[i] * sin(a_i),   a_i = f32(pos) * inv_freq[i]
// The angle is the same f32 product HF forms. GPU sin/cos are only specified near [-pi, pi] and
// positions reach tens of thousands, so the angle is reduced by pi/2 in extended precision and
// evaluated with polynomials. sign = -1 rotates by the negative angle (the backward). cos and sin
// are multiplied by `scale` first, as HF multiplies them by its attention scaling (YaRN's factor;
// 1 otherwise); the backward applies the same factor.
// One invocation per pair (flat_index of grid.wgsl).

#include "grid.wgsl"

#const WG: u32

struct Params {
  n: u32, // B * T * H * D/2 pairs
  heads: u32,
  half: u32, // D / 2
  sign: f32,
  scale: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> pos: array<i32>;
@group(0) @binding(3) var<storage, read> inv_freq: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

const TWO_OVER_PI: f32 = 0.63661977236758134;
// pi/2 split into four pieces of at most 6 significant bits and an f32 remainder: k * piece is
// exact for |k| < 2^18 (angles up to ~4e5), and each subtraction is exact or lands near the final
// small argument, so the reduced argument keeps nearly full f32 accuracy.
const PIO2_1: f32 = 1.5625;
const PIO2_2: f32 = 0.008056640625;
const PIO2_3: f32 = 0.00023651123046875;
const PIO2_4: f32 = 3.159046173095703125e-06;
const PIO2_5: f32 = 1.5893254712295857e-08;

// Minimax polynomials for |r| <= pi/4 (the classic Cephes single-precision coefficients).
fn sin_poly(r: f32) -> f32 {
  let z = r * r;
  return r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
}

fn cos_poly(r: f32) -> f32 {
  let z = r * r;
  return 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 +
    z * 2.443315711809948e-5));
}

// (cos a, sin a) with a = k * pi/2 + r.
fn cos_sin(a: f32) -> vec2f {
  let k = round(a * TWO_OVER_PI);
  var r = a - k * PIO2_1;
  r = r - k * PIO2_2;
  r = r - k * PIO2_3;
  r = r - k * PIO2_4;
  r = r - k * PIO2_5;
  let c = cos_poly(r);
  let s = sin_poly(r);
  switch (i32(k) & 3) {
    case 0: { return vec2f(c, s); }
    case 1: { return vec2f(-s, c); }
    case 2: { return vec2f(-c, -s); }
    default: { return vec2f(s, -c); }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.n) {
    return;
  }
  let d = i % p.half;
  let row = i / p.half; // (b, t, h)
  let bt = row / p.heads;
  let base = row * 2u * p.half + d;
  let cs = cos_sin(f32(pos[bt]) * inv_freq[d]);
  let c = cs.x * p.scale;
  let s = cs.y * p.scale * p.sign;
  let x1 = x[base];
  let x2 = x[base + p.half];
  out[base] = x1 * c - x2 * s;
  out[base + p.half] = x2 * c + x1 * s;
}
