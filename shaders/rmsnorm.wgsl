// RMSNorm over the last dimension, as Hugging Face's Qwen2/Llama RMSNorm computes it in f32:
// y = w * (x * rsqrt(mean(x^2) + eps)). The per-row rstd is saved for the backward.
// Row kernels run one workgroup per row (row = wid.y * nwg.x + wid.x, so the grid can fold to 2-D).
// The weight gradient is reduced over rows in two deterministic passes: per-chunk partial sums
// here, then their column sums (matmul_bias.wgsl), so the result never depends on scheduling.

#include "grid.wgsl"
#include "workgroup_sum.wgsl"

#const WG: u32

struct Params {
  rows: u32,
  cols: u32,
  eps: f32,
  chunk: u32, // rows per partial sum (dw_partial)
  _p0: u32,
  _p1: u32,
  _p2: u32,
  _p3: u32,
}

@group(0) @binding(0) var<uniform> p: Params;

// forward
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> rstd_out: array<f32>;

// backward_x (x at 1, w at 2)
@group(0) @binding(3) var<storage, read> rstd: array<f32>;
@group(0) @binding(4) var<storage, read> gy: array<f32>;
@group(0) @binding(5) var<storage, read_write> gx: array<f32>;

// dw_partial: x at 1, gy at 2, rstd at 3 (distinct names keep each entry's bindings explicit)
@group(0) @binding(2) var<storage, read> gy_dw: array<f32>;
@group(0) @binding(4) var<storage, read_write> part_out: array<f32>;

@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
           @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) {
    return;
  }
  let base = row * p.cols;
  var ss = 0.0;
  for (var c = lid.x; c < p.cols; c += WG) {
    let v = x[base + c];
    ss += v * v;
  }
  let r = inverseSqrt(wg_sum(ss, lid.x) / f32(p.cols) + p.eps);
  for (var c = lid.x; c < p.cols; c += WG) {
    y[base + c] = w[c] * (x[base + c] * r);
  }
  if (lid.x == 0u) {
    rstd_out[row] = r;
  }
}

// gx_k = r * w_k * g_k - r^3 / C * x_k * sum_j(g_j * w_j * x_j)
@compute @workgroup_size(WG)
fn backward_x(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) {
    return;
  }
  let base = row * p.cols;
  let r = rstd[row];
  var dot = 0.0;
  for (var c = lid.x; c < p.cols; c += WG) {
    dot += gy[base + c] * w[c] * x[base + c];
  }
  let k = r * r * r * wg_sum(dot, lid.x) / f32(p.cols);
  for (var c = lid.x; c < p.cols; c += WG) {
    gx[base + c] = r * w[c] * gy[base + c] - k * x[base + c];
  }
}

// part[chunk, c] = sum over the chunk's rows of g * x * rstd; grid [ceil(C / WG), nchunks].
@compute @workgroup_size(WG)
fn dw_partial(@builtin(global_invocation_id) gid: vec3u) {
  let col = gid.x;
  if (col >= p.cols) {
    return;
  }
  let r0 = gid.y * p.chunk;
  let r1 = min(p.rows, r0 + p.chunk);
  var acc = 0.0;
  for (var r = r0; r < r1; r++) {
    acc += gy_dw[r * p.cols + col] * (x[r * p.cols + col] * rstd[r]);
  }
  part_out[gid.y * p.cols + col] = acc;
}
