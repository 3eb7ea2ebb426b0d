// The logistic sigmoid 1 / (1 + e^-x) in the form whose exp never overflows: e = e^-|x| <= 1, then
// 1 / (1 + e) for x >= 0 and e / (1 + e) below. Shared by SwiGLU (swiglu, the fused skinny and
// woven tiled products and their split-K finish), the elementwise sigmoid and silu, and SAPO's
// gate in ppo_loss.
// f32; an f16 includer converts around it.

fn sigmoid(x: f32) -> f32 {
  let e = exp(-abs(x));
  return select(e / (1.0 + e), 1.0 / (1.0 + e), x >= 0.0);
}

// Four of them, one per component.
fn sigmoid4(g: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(sigmoid(g.x), sigmoid(g.y), sigmoid(g.z), sigmoid(g.w));
}
