// Forward row kernel of the GEMM attention path: the scores S = Qg K^T of one row become, in
// place, the masked softmax of scale * S, and the row's logsumexp goes to lse. A row that sees no
// key becomes zeros with lse NEG, as in attention_fwd. Each thread keeps an online (max, sum)
// over the columns it strides; the workgroup merges them. With HALF (f16 precision) P is rounded
// to halves before P V, as torch's fp16 attention does; S, the softmax and lse stay f32.

#include "attention_gemm_rows.wgsl"
#include "half_round.wgsl"

const HALF: bool = false;

@group(0) @binding(1) var<storage, read_write> s: array<f32>; // [nb, G * T, L]
@group(0) @binding(3) var<storage, read_write> lse: array<f32>; // [B, Hq, T] (binding 2 unused)

@compute @workgroup_size(WG)
fn main(
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) nwg: vec3u,
  @builtin(local_invocation_index) tid: u32,
) {
  let row = row_index(wid, nwg, tid);
  let lane = tid % TPR;
  let valid = row < p.rows;
  let r = row_of(min(row, p.rows - 1u));
  let cols = select(0u, p.l, valid);
  var m = NEG;
  var sum = 0.0;
  for (var c = lane; c < cols; c += TPR) {
    if (visible(r, c)) {
      let x = s[r.base + c] * p.scale;
      let mn = max(m, x);
      sum = sum * exp(m - mn) + exp(x - mn);
      m = mn;
    }
  }
  red_a[tid] = m;
  red_b[tid] = sum;
  for (var w = TPR / 2u; w > 0u; w /= 2u) {
    workgroupBarrier();
    if (lane < w) {
      let m2 = red_a[tid + w];
      let mn = max(red_a[tid], m2);
      red_b[tid] = red_b[tid] * exp(red_a[tid] - mn) + red_b[tid + w] * exp(m2 - mn);
      red_a[tid] = mn;
    }
  }
  workgroupBarrier();
  let total = red_b[tid - lane];
  let l = select(NEG, red_a[tid - lane] + log(total), total > 0.0);
  for (var c = lane; c < cols; c += TPR) {
    var pr = 0.0;
    if (total > 0.0 && visible(r, c)) { pr = exp(s[r.base + c] * p.scale - l); }
    if (HALF) { pr = round_half(pr); }
    s[r.base + c] = pr;
  }
  if (valid && lane == 0u) { lse[r.lse_at] = l; }
}
