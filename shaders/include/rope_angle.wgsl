// cos and sin of a rotary angle and the rotation of one pair (rope.wgsl, rope_qk.wgsl,
// rope_qk_cache.wgsl). GPU sin/cos are only specified near
// [-pi, pi] and positions reach tens of thousands, so the angle is reduced by pi/2 in extended
// precision and evaluated with polynomials.

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

// (cos a, sin a) scaled by HF's attention scaling, the sine also by sign (-1: the backward).
fn scaled_cos_sin(a: f32, scale: f32, sign: f32) -> vec2f {
  let cs = cos_sin(a);
  return vec2f(cs.x * scale, cs.y * scale * sign);
}

// The pair (x1, x2) = (x[i], x[i + D/2]) turned by the angle whose (cos, sin) is cs.
fn rotate_pair(x1: f32, x2: f32, cs: vec2f) -> vec2f {
  return vec2f(x1 * cs.x - x2 * cs.y, x2 * cs.x + x1 * cs.y);
}
