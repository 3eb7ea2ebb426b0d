// Appends the new keys and values of one layer to its cache at time offset `start`:
// cache[b, start + t, :] = new[b / repeat, t, :], for k [B / repeat, T, Hkv, D] into
// [B, Smax, Hkv, D] (v likewise). repeat > 1 shares one prompt's prefill with its n samples.

const WG: u32 = 256u;

struct Params {
  n: u32, // B * T * Hkv * D (cache rows, not source rows)
  t_len: u32, // T
  row: u32, // Hkv * D
  s_max: u32,
  start: u32,
  repeat: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> k_new: array<f32>;
@group(0) @binding(2) var<storage, read> v_new: array<f32>;
@group(0) @binding(3) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(4) var<storage, read_write> v_cache: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let i = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (i >= p.n) { return; }
  let per_b = p.t_len * p.row;
  let b = i / per_b;
  let within = i - b * per_b;
  let dst = b * p.s_max * p.row + p.start * p.row + within;
  let src = (b / p.repeat) * per_b + within;
  k_cache[dst] = k_new[src];
  v_cache[dst] = v_new[src];
}
