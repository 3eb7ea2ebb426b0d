// The output store of matmul_skinny.wgsl and matmul_skinny_swiglu.wgsl. The includer declares
// WG_X, `p` with field n, and the output `y`.

// Row `row` (its first element's index) at columns n, n + WG_X, n + 2 WG_X, n + 3 WG_X, those
// below N.
fn store_cols(row: u32, n: u32, v: vec4<f32>) {
  if (n < p.n) { y[row + n] = v.x; }
  if (n + WG_X < p.n) { y[row + n + WG_X] = v.y; }
  if (n + 2u * WG_X < p.n) { y[row + n + 2u * WG_X] = v.z; }
  if (n + 3u * WG_X < p.n) { y[row + n + 3u * WG_X] = v.w; }
}
