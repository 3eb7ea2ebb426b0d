// Inverted dropout with a counter-based mask: y[i] = x[i] / (1 - p) where element i is kept,
// else 0. Element i is kept when hash(i, seed) >= threshold = round(p * 2^32), so the mask is a
// pure function of (seed, i): the backward (the same op on the gradient) and a recomputed
// forward (activation checkpointing) draw exactly the forward's mask without storing it.
// The hash is PCG's output permutation (O'Neill's pcg_hash), applied to the index mixed with the
// hashed seed; src/tensor/ref/dropout.ts computes the same bits on the CPU.

#include "grid.wgsl"

#const WG: u32

struct Params {
  n: u32,
  seed: u32,
  threshold: u32,
  scale: f32, // 1 / (1 - p)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

fn pcg(v: u32) -> u32 {
  let s = v * 747796405u + 2891336453u;
  let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.n) { return; }
  let keep = pcg(i ^ pcg(p.seed)) >= p.threshold;
  y[i] = select(0.0, x[i] * p.scale, keep);
}
