// The last time step of each sequence: out[b, c] = x[b, T - 1, c] for x [B, T, C]. Prefill runs
// the lm_head on these rows only (left padding puts every prompt's last token at T - 1).

const WG: u32 = 256u;

struct Params {
  n: u32, // B * C
  t_len: u32,
  c: u32,
  _p0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let i = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (i >= p.n) { return; }
  let b = i / p.c;
  out[i] = x[(b * p.t_len + p.t_len - 1u) * p.c + (i - b * p.c)];
}
