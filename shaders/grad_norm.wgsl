// Global gradient norm without a readback: per-tensor partial sums of squares into one buffer,
// then a single workgroup sums the partials and writes [norm, clip scale].

const WG: u32 = 256u;
const PER_THREAD: u32 = 8u;

struct Params {
  n: u32, // elements of this tensor (sumsq) or number of partials (finish)
  out_offset: u32, // first partial slot of this tensor (sumsq)
  max_norm: f32, // finish: clip threshold (<= 0 or inf: no clipping)
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> partials: array<f32>;

var<workgroup> acc: array<f32, WG>;

@compute @workgroup_size(WG)
fn sumsq(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
         @builtin(local_invocation_id) lid: vec3u) {
  let group = wid.y * nwg.x + wid.x;
  let base = group * WG * PER_THREAD + lid.x;
  var s = 0.0;
  for (var k = 0u; k < PER_THREAD; k++) {
    let i = base + k * WG;
    if (i < p.n) { let v = x[i]; s += v * v; }
  }
  acc[lid.x] = s;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
    if (lid.x < stride) { acc[lid.x] += acc[lid.x + stride]; }
    workgroupBarrier();
  }
  if (lid.x == 0u) { partials[p.out_offset + group] = acc[0]; }
}
