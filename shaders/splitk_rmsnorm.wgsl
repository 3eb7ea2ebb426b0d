// The split-K sum of a decoding linear layer fused with the RMSNorm that reads its output (o_proj
// into post_attention_layernorm; down_proj into the next layer's input_layernorm or the final
// norm): one workgroup per row sums each element's splits (+ bias) (+ residual) as
// matmul_splitk.wgsl does and writes the row to y, then normalises it as rmsnorm.wgsl's forward
// does, with the same reduction: y and normed equal those two passes' outputs bit for bit.
// Without a bias or a residual (flags) the binding takes any read-only buffer and is not read.

#include "grid.wgsl"
#include "split_total.wgsl"
#include "workgroup_sum.wgsl"

#const WG: u32
alias BIAS_T = f32;

struct Params {
  rows: u32,
  cols: u32,
  splits: u32,
  eps: f32,
  has_bias: u32,
  has_resid: u32,
  _p0: u32,
  _p1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>; // [splits, rows, cols]
@group(0) @binding(2) var<storage, read> bias: array<BIAS_T>; // [cols]
@group(0) @binding(3) var<storage, read> resid: array<f32>; // [rows, cols]
@group(0) @binding(4) var<storage, read> w: array<f32>; // [cols], the norm's weight
@group(0) @binding(5) var<storage, read_write> y: array<f32>; // [rows, cols]
@group(0) @binding(6) var<storage, read_write> normed: array<f32>; // [rows, cols]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) {
    return;
  }
  let base = row * p.cols;
  var ss = 0.0;
  for (var c = lid.x; c < p.cols; c += WG) {
    var v = split_total(base + c, p.rows * p.cols, p.splits);
    if (p.has_bias != 0u) {
      v = v + f32(bias[c]);
    }
    if (p.has_resid != 0u) {
      v = v + resid[base + c];
    }
    y[base + c] = v;
    ss += v * v;
  }
  let r = inverseSqrt(wg_sum(ss, lid.x) / f32(p.cols) + p.eps);
  for (var c = lid.x; c < p.cols; c += WG) {
    normed[base + c] = w[c] * (y[base + c] * r);
  }
}
