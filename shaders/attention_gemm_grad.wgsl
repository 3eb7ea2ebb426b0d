// Backward row kernel of the GEMM attention path (recompute): from the scores S = Qg K^T, the
// forward's lse and dP = dOg V^T of one row it writes P = exp(scale * S - lse) (masked) over S
// and dS = scale * P * (dP - delta) over dP, with delta = dO . O of the row's query (read in the
// op layout [B, T, Hq, D]). A row that saw no key (lse at or below MASKED) gets P = dS = 0, as
// does every masked entry.
// With HALF (f16 precision, as torch's fp16 attention backward): delta is the dot product of O
// and dO rounded to halves, P is rounded to a half for dV = P^T dO, and dS = round(P (dP - delta))
// * scale for dQ and dK; P inside dS, dP and delta stay f32.

#include "attention_gemm_rows.wgsl"
#include "half_round.wgsl"

const HALF: bool = false;

@group(0) @binding(1) var<storage, read_write> s: array<f32>; // [nb, G * T, L]: S in, P out
@group(0) @binding(2) var<storage, read_write> dp: array<f32>; // [nb, G * T, L]: dP in, dS out
@group(0) @binding(3) var<storage, read> lse: array<f32>; // [B, Hq, T] (first of the stats)
@group(0) @binding(5) var<storage, read> o: array<f32>; // [B, T, Hq, D]
@group(0) @binding(6) var<storage, read> dout: array<f32>; // [B, T, Hq, D]

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
  let b = r.bh / p.hkv;
  let h = (r.bh % p.hkv) * p.g + r.g;
  let ob = ((b * p.t + r.t) * p.hkv * p.g + h) * p.d;
  var part = 0.0;
  for (var c = lane; c < select(0u, p.d, valid); c += TPR) {
    if (HALF) { part += round_half(o[ob + c]) * round_half(dout[ob + c]); }
    else { part += o[ob + c] * dout[ob + c]; }
  }
  let delta = row_sum(part, tid);
  let l = lse[r.lse_at];
  let seen = l > MASKED;
  for (var c = lane; c < select(0u, p.l, valid); c += TPR) {
    var pr = 0.0;
    var ds = 0.0;
    // Masked entries are not read: a causal product leaves score blocks past its rows' reach
    // unwritten (matmul_tile.wgsl's CAUSAL), and P and dS are 0 there.
    if (seen && visible(r, c)) {
      pr = exp(s[r.base + c] * p.scale - l);
      ds = pr * (dp[r.base + c] - delta);
    }
    if (HALF) {
      s[r.base + c] = round_half(pr);
      dp[r.base + c] = round_half(ds) * p.scale;
    } else {
      s[r.base + c] = pr;
      dp[r.base + c] = ds * p.scale;
    }
  }
}
