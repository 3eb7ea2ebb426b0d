// Rotary position embedding with Hugging Face's rotate_half layout: dimension i is paired with
// i + D/2 (not interleaved). For x [B, T, H, D] and integer positions [B, T]:
//   out[i]       = x[i] * cos(a_i) - x[i + D/2] * sin(a_i)
//   out[i + D/2] = x[i + D/2] * cos(a_i) + x[i] * sin(a_i),   a_i = f32(pos) * inv_freq[i]
// The angle is the same f32 product HF forms (cos_sin: rope_angle.wgsl). sign = -1 rotates by
// the negative angle (the backward). cos and sin are multiplied by `scale` first, as HF
// multiplies them by its attention scaling (YaRN's factor; 1 otherwise); the backward applies
// the same factor.
// One invocation per pair (flat_index of grid.wgsl).

#include "grid.wgsl"
#include "rope_angle.wgsl"

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
  let cs = scaled_cos_sin(f32(pos[bt]) * inv_freq[d], p.scale, p.sign);
  let r = rotate_pair(x[base], x[base + p.half], cs);
  out[base] = r.x;
  out[base + p.half] = r.y;
}
