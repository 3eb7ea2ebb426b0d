// Merges the partial outputs of a key-split attention forward: each split wrote its normalised
// output o_i and logsumexp lse_i; the merged row is sum_i exp(lse_i - lse) o_i with
// lse = log sum_i exp(lse_i). One invocation per output element (b, t, h, c).

#include "attention_lse.wgsl"
#include "grid.wgsl"

#const WG: u32

struct Params {
  n: u32, // B * T * Hq * D
  nsplit: u32,
  t: u32,
  hq: u32,
  d: u32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> o_part: array<f32>; // [nsplit, B, T, Hq, D]
@group(0) @binding(2) var<storage, read> lse_part: array<f32>; // [nsplit, B, Hq, T]
@group(0) @binding(3) var<storage, read_write> o: array<f32>; // [B, T, Hq, D]
@group(0) @binding(4) var<storage, read_write> lse: array<f32>; // [B, Hq, T]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.n) { return; }
  let c = i % p.d;
  let row = i / p.d; // (b * T + t) * Hq + h
  let h = row % p.hq;
  let bt = row / p.hq;
  let li = ((bt / p.t) * p.hq + h) * p.t + bt % p.t;
  let nrows = p.n / p.d;
  var mx = NEG;
  for (var j = 0u; j < p.nsplit; j++) { mx = max(mx, lse_part[j * nrows + li]); }
  var wsum = 0.0;
  var acc = 0.0;
  if (mx > MASKED) {
    for (var j = 0u; j < p.nsplit; j++) {
      let lj = lse_part[j * nrows + li];
      if (lj > MASKED) {
        let w = exp(lj - mx);
        wsum += w;
        acc += w * o_part[j * p.n + i];
      }
    }
  }
  o[i] = select(0.0, acc / max(wsum, 1.0), wsum > 0.0);
  if (c == 0u) { lse[li] = select(NEG, mx + log(wsum), wsum > 0.0); }
}
