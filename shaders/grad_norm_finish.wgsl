// Sums the partial squares (in a fixed order, so the result is deterministic) and writes
// out[0] = global L2 norm, out[1] = clip scale min(1, max_norm / (norm + 1e-6)), 0 when not finite.
// Under loss scaling the gradients hold scale * g: the norm is multiplied by inv_scale (1 / scale,
// a power of two, so exactly) and so is out[1], which AdamW multiplies the gradients by.

#include "grad_norm_params.wgsl"
#include "workgroup_sum.wgsl"

#const WG: u32

@group(0) @binding(1) var<storage, read> partials: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

fn is_finite(v: f32) -> bool {
  // NaN fails every comparison; infinities exceed the largest finite f32.
  return v == v && abs(v) <= 3.4028234e38;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3u) {
  var s = 0.0;
  for (var i = lid.x; i < p.n; i += WG) { s += partials[i]; }
  let total = wg_sum(s, lid.x);
  if (lid.x == 0u) {
    let norm = sqrt(total) * p.inv_scale;
    out[0] = norm;
    var scale = 1.0;
    if (!is_finite(norm)) {
      scale = 0.0;
    } else if (p.max_norm > 0.0 && is_finite(p.max_norm) && norm > p.max_norm) {
      scale = p.max_norm / (norm + 1e-6);
    }
    out[1] = scale * p.inv_scale;
  }
}
