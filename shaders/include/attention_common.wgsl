// What the tiled attention kernels (attention_fwd, attention_bwd_dq, attention_bwd_dkv) add to
// attention_params: f32 k / v bindings, threads per row TPR (given by the TS op) and vec4 column
// group loads into workgroup tiles. Tiles are vec4 arrays over column groups: fewer, wider
// workgroup loads, and CPU adapters compile the zero-initialisation of workgroup arrays far
// faster for fewer elements.
//
// load_kv_tile needs the includer's WG (invocations per workgroup) and workgroup arrays ks, vs.

#include "attention_params.wgsl"

#const TPR: u32
const NC: u32 = (D4 + TPR - 1u) / TPR; // column groups per thread

@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;

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
