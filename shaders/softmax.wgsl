// Softmax and log-softmax over the last axis, one workgroup per row. The row is streamed in a
// loop (rows may be a whole vocabulary, 151936 wide): a first pass keeps a running maximum and
// the sum of exp(x - max) per thread (rescaled when the maximum grows), a tree merges the
// threads, a second pass writes the result. -inf entries (masked logits) contribute nothing.
//
// Backward entries take the forward output y and the upstream gradient g:
//   softmax:     dx = y * (g - sum(g * y))
//   log-softmax: dx = g - exp(y) * sum(g)

const WG: u32 = 256u;

struct Params {
  rows: u32,
  cols: u32,
  lowest: f32, // -inf, passed in because WGSL has no literal for it
  _p0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

var<workgroup> sh_m: array<f32, WG>;
var<workgroup> sh_s: array<f32, WG>;

// Merges two (max, sum of exp(v - max)) pairs; an empty side has max = -inf.
fn merge(a: vec2f, b: vec2f) -> vec2f {
  if (a.x <= p.lowest) { return b; }
  if (b.x <= p.lowest) { return a; }
  let m = max(a.x, b.x);
  return vec2f(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

// (max, sum of exp(x - max)) of the row starting at base, the same in every thread.
fn row_stats(base: u32, lid: u32) -> vec2f {
  var acc = vec2f(p.lowest, 0.0);
  for (var j = lid; j < p.cols; j += WG) {
    acc = merge(acc, vec2f(x[base + j], 1.0));
  }
  sh_m[lid] = acc.x;
  sh_s[lid] = acc.y;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      let r = merge(vec2f(sh_m[lid], sh_s[lid]), vec2f(sh_m[lid + s], sh_s[lid + s]));
      sh_m[lid] = r.x;
      sh_s[lid] = r.y;
    }
    workgroupBarrier();
  }
  return vec2f(sh_m[0], sh_s[0]);
}

fn tree_sum(v: f32, lid: u32) -> f32 {
  sh_s[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { sh_s[lid] += sh_s[lid + s]; }
    workgroupBarrier();
  }
  return sh_s[0];
}

fn row_of(wid: vec3u, nwg: vec3u) -> u32 {
  return wid.y * nwg.x + wid.x;
}

@compute @workgroup_size(WG)
fn softmax_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                @builtin(local_invocation_id) lid: vec3u) {
  let row = row_of(wid, nwg);
  if (row >= p.rows) { return; } // uniform per workgroup: barriers stay valid
  let base = row * p.cols;
  let st = row_stats(base, lid.x);
  let inv = 1.0 / st.y;
  for (var j = lid.x; j < p.cols; j += WG) {
    out[base + j] = exp(x[base + j] - st.x) * inv;
  }
}

@compute @workgroup_size(WG)
fn log_softmax_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                    @builtin(local_invocation_id) lid: vec3u) {
  let row = row_of(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  let st = row_stats(base, lid.x);
  let lse = st.x + log(st.y);
  for (var j = lid.x; j < p.cols; j += WG) {
    out[base + j] = x[base + j] - lse;
  }
}

// x holds the forward output y here.
@compute @workgroup_size(WG)
fn softmax_grad_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                     @builtin(local_invocation_id) lid: vec3u) {
  let row = row_of(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var acc = 0.0;
  for (var j = lid.x; j < p.cols; j += WG) {
    acc += g[base + j] * x[base + j];
  }
  let d = tree_sum(acc, lid.x);
  for (var j = lid.x; j < p.cols; j += WG) {
    dx[base + j] = x[base + j] * (g[base + j] - d);
  }
}

@compute @workgroup_size(WG)
fn log_softmax_grad_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                         @builtin(local_invocation_id) lid: vec3u) {
  let row = row_of(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var acc = 0.0;
  for (var j = lid.x; j < p.cols; j += WG) {
    acc += g[base + j];
  }
  let total = tree_sum(acc, lid.x);
  for (var j = lid.x; j < p.cols; j += WG) {
    dx[base + j] = g[base + j] - exp(x[base + j]) * total;
  }
}
