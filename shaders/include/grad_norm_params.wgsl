// The uniform block of both gradient-norm passes (grad_norm, grad_norm_finish), packed by
// src/tensor/ops/grad_norm.ts.

struct Params {
  n: u32, // elements of this tensor (sumsq) or number of partials (finish)
  out_offset: u32, // first partial slot of this tensor (sumsq)
  max_norm: f32, // finish: clip threshold (<= 0 or inf: no clipping)
  inv_scale: f32, // finish: 1 / loss scale; the norm and the update see unscaled gradients
}

@group(0) @binding(0) var<uniform> p: Params;
