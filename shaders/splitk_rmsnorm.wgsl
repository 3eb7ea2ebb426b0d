// The split-K sum of a decoding linear layer and the RMSNorm that reads its output, in one pass
// (o_proj into post_attention_layernorm; down_proj into the next layer's input_layernorm or the
// final norm): y = sum over s of part[s] (+ bias) (+ resid), normed = w * (y * rsqrt(mean(y^2) +
// eps)). One workgroup per row. Invocation t owns columns t, t + WG, ... (PER of them, the columns
// rmsnorm.wgsl's forward gives it), and each round of four splits loads all its columns' partials
// before adding any: a row waits on splits / 4 rounds of loads, not on that many per column. The
// sums run in split order as matmul_splitk.wgsl's, the norm in rmsnorm.wgsl's order and tree (the
// same WG), so y and normed equal those two passes' outputs bit for bit.

#include "grid.wgsl"
#include "workgroup_sum.wgsl"

#const WG: u32
#const PER: u32 // columns per invocation: ceil(cols / WG), 1 to 8
alias BIAS_T = f32;

struct Params {
  rows: u32,
  cols: u32,
  splits: u32,
  eps: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>; // [splits, rows, cols]
@group(0) @binding(2) var<storage, read> w: array<f32>; // [cols], the norm's weight
@group(0) @binding(3) var<storage, read_write> y: array<f32>; // [rows, cols]
@group(0) @binding(4) var<storage, read_write> normed: array<f32>; // [rows, cols]
@group(0) @binding(5) var<storage, read> bias: array<BIAS_T>; // [cols]
@group(0) @binding(6) var<storage, read> resid: array<f32>; // [rows, cols]

// Column j of invocation t, clamped into the row: a column past it loads but is never used.
fn col(t: u32, j: u32) -> u32 {
  return min(t + j * WG, p.cols - 1u);
}

fn owns(t: u32, j: u32) -> bool {
  return t + j * WG < p.cols;
}

// The split sums of invocation t's columns of the row starting at `base`, in split order.
fn split_sums(base: u32, t: u32) -> array<f32, 8> {
  let size = p.rows * p.cols;
  var s = array<f32, 8>();
  var z = 0u;
  for (; z + 4u <= p.splits; z += 4u) {
    let at = z * size + base;
#unroll j 8
    var a$j = 0.0;
    var b$j = 0.0;
    var c$j = 0.0;
    var d$j = 0.0;
    if ($j < PER) {
      let i = at + col(t, $j);
      a$j = part[i];
      b$j = part[i + size];
      c$j = part[i + 2u * size];
      d$j = part[i + 3u * size];
    }
#end
#unroll j 8
    if ($j < PER) { s[$j] = (((s[$j] + a$j) + b$j) + c$j) + d$j; }
#end
  }
  for (; z < p.splits; z++) {
    let at = z * size + base;
#unroll j 8
    if ($j < PER) { s[$j] += part[at + col(t, $j)]; }
#end
  }
  return s;
}

// Writes row `base`'s y (v, this invocation's columns) and its norm.
fn norm_row(base: u32, t: u32, v: array<f32, 8>) {
  var ss = 0.0;
#unroll j 8
  if ($j < PER && owns(t, $j)) { ss += v[$j] * v[$j]; }
#end
  let r = inverseSqrt(wg_sum(ss, t) / f32(p.cols) + p.eps);
#unroll j 8
  if ($j < PER && owns(t, $j)) {
    let c = t + $j * WG;
    y[base + c] = v[$j];
    normed[base + c] = w[c] * (v[$j] * r);
  }
#end
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  norm_row(base, lid.x, split_sums(base, lid.x));
}

@compute @workgroup_size(WG)
fn main_bias(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
             @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  let t = lid.x;
  var v = split_sums(base, t);
#unroll j 8
  if ($j < PER) { v[$j] = v[$j] + f32(bias[col(t, $j)]); }
#end
  norm_row(base, t, v);
}

// Binding 5 (bias) is left unbound here.
@compute @workgroup_size(WG)
fn main_resid(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  let t = lid.x;
  var v = split_sums(base, t);
#unroll j 8
  if ($j < PER) { v[$j] = v[$j] + resid[base + col(t, $j)]; }
#end
  norm_row(base, t, v);
}

@compute @workgroup_size(WG)
fn main_bias_resid(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                   @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  let t = lid.x;
  var v = split_sums(base, t);
#unroll j 8
  if ($j < PER) {
    let c = col(t, $j);
    v[$j] = (v[$j] + f32(bias[c])) + resid[base + c];
  }
#end
  norm_row(base, t, v);
}
