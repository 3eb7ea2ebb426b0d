// rope.wgsl's rotation of q [B, T, Hq, D] and k [B, T, Hkv, D] at the same positions [B, T] in
// one dispatch (the same angle, scale and sign, so each output equals rope.wgsl's bit for bit).
// The forward turns both by +angle; the backward (sign = -1) turns both gradients back.
// One invocation per pair of either tensor: per (b, t), Hq heads of q then Hkv heads of k.

#include "grid.wgsl"
#include "rope_angle.wgsl"

#const WG: u32

struct Params {
  n: u32, // B * T * (Hq + Hkv) * D/2 pairs
  hq: u32,
  hkv: u32,
  half: u32, // D / 2
  sign: f32,
  scale: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> pos: array<i32>;
@group(0) @binding(4) var<storage, read> inv_freq: array<f32>;
@group(0) @binding(5) var<storage, read_write> q_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> k_out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.n) {
    return;
  }
  let d = i % p.half;
  let row = i / p.half; // (b, t, head of q or k)
  let heads = p.hq + p.hkv;
  let bt = row / heads;
  let h = row % heads;
  let cs = scaled_cos_sin(f32(pos[bt]) * inv_freq[d], p.scale, p.sign);
  if (h < p.hq) {
    let base = (bt * p.hq + h) * 2u * p.half + d;
    let r = rotate_pair(q[base], q[base + p.half], cs);
    q_out[base] = r.x;
    q_out[base + p.half] = r.y;
  } else {
    let base = (bt * p.hkv + h - p.hq) * 2u * p.half + d;
    let r = rotate_pair(k[base], k[base + p.half], cs);
    k_out[base] = r.x;
    k_out[base + p.half] = r.y;
  }
}
