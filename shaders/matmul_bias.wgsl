// Column sums out[j] = sum_i x[i, j] of a row-major [R, N] matrix: the bias gradient of a linear
// layer, and the reduction of a gradient over batch entries that shared one matrix.
// A workgroup owns COLS adjacent columns; its ROWS thread rows stride down the matrix so each
// warp reads consecutive addresses, then the partial sums meet in workgroup memory.
// Column groups are folded into a 2-D grid: group = wid.y * nwg.x + wid.x. Workgroup z takes
// rows [z * chunk, (z + 1) * chunk) and writes its sums to out[z * cols + j]: a matrix of few
// columns and many rows (a k_proj bias: 4 column groups, 6,144 rows) is summed in row chunks
// by many workgroups, then their [chunks, cols] partials by one more pass.

#const COLS: u32
#const ROWS: u32

struct Params {
  rows: u32,
  cols: u32,
  chunk: u32, // rows per workgroup z (>= rows: one chunk)
  _p1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> part: array<f32, COLS * ROWS>;

@compute @workgroup_size(COLS, ROWS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let j = (wid.y * nwg.x + wid.x) * COLS + lid.x;
  let r0 = wid.z * p.chunk;
  let r1 = min(p.rows, r0 + p.chunk);
  var s = 0.0;
  if (j < p.cols) {
    // Four rows loaded before they are added (in row order): the walk down a chunk is the load
    // latency, not the bandwidth.
    var i = r0 + lid.y;
    for (; i + 3u * ROWS < r1; i += 4u * ROWS) {
      let a = x[i * p.cols + j];
      let b = x[(i + ROWS) * p.cols + j];
      let c = x[(i + 2u * ROWS) * p.cols + j];
      let d = x[(i + 3u * ROWS) * p.cols + j];
      s = (((s + a) + b) + c) + d;
    }
    for (; i < r1; i += ROWS) { s += x[i * p.cols + j]; }
  }
  part[lid.y * COLS + lid.x] = s;
  workgroupBarrier();
  if (lid.y == 0u && j < p.cols) {
    var t = 0.0;
    for (var r = 0u; r < ROWS; r++) { t += part[r * COLS + lid.x]; }
    out[wid.z * p.cols + j] = t;
  }
}
