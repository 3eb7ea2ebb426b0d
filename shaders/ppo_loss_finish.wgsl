// Aggregation of the per-row partial sums of ppo_loss.wgsl / ppo_loss_value.wgsl (verl's agg_loss,
// src/algos/agg.ts) in one workgroup: partials [B, 2] vec4 hold (count, c1, c2, c3), (c4..c7).
//   token-mean:               agg_j = sum_b c_j / N_tok * dp           N_tok = batch_tokens or sum count
//   seq-mean-token-sum:       agg_j = sum_b c_j / G * dp               G = batch_seqs or #rows with count > 0
//   seq-mean-token-mean:      agg_j = sum_b (c_j / count_b) / G * dp
//   seq-mean-token-sum-norm:  agg_j = sum_b c_j / G * dp / horizon
// Column j reports agg_j when bit j of agg_bits is set, else the token mean sum_b c_j / sum count;
// loss = sum_j coef_j stat_j. Each row also gets its weight w_b = d loss / d (token loss), which the
// backward kernels use. A zero denominator gives 0 (not NaN), as agg.ts does.

const WG: u32 = 256u;

struct Params {
  rows: u32,
  mode: u32, // 0 token-mean, 1 seq-mean-token-sum, 2 seq-mean-token-mean, 3 seq-mean-token-sum-norm
  agg_bits: u32,
  nstats: u32,
  batch_tokens: f32, // < 0: count this batch's valid tokens
  batch_seqs: f32, // < 0: count this batch's non-empty rows
  dp: f32,
  horizon: f32,
  coef: array<vec4<f32>, 2>, // coef[j / 4][j % 4] for columns j = 0..7 (column 0 unused)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> partials: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> loss: array<f32>;
@group(0) @binding(3) var<storage, read_write> stats: array<f32>;
@group(0) @binding(4) var<storage, read_write> row_w: array<f32>;

var<workgroup> red: array<vec4<f32>, WG>;

fn wg_sum4(v: vec4<f32>, i: u32) -> vec4<f32> {
  red[i] = v;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k >> 1u) {
    if (i < k) {
      red[i] = red[i] + red[i + k];
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3u) {
  // seq*: per-row contributions (divided by the row count for seq-mean-token-mean), x holds the
  // number of non-empty rows; tok*: plain sums, x holds the token count.
  var seq0 = vec4<f32>(0.0);
  var seq1 = vec4<f32>(0.0);
  var tok0 = vec4<f32>(0.0);
  var tok1 = vec4<f32>(0.0);
  for (var b = lid.x; b < p.rows; b += WG) {
    let a = partials[2u * b];
    let c = partials[2u * b + 1u];
    if (a.x > 0.0) {
      let s = select(1.0, 1.0 / a.x, p.mode == 2u);
      seq0 += vec4<f32>(1.0, a.yzw * s);
      seq1 += c * s;
      tok0 += a;
      tok1 += c;
    }
  }
  seq0 = wg_sum4(seq0, lid.x);
  seq1 = wg_sum4(seq1, lid.x);
  tok0 = wg_sum4(tok0, lid.x);
  tok1 = wg_sum4(tok1, lid.x);
  var den = select(p.batch_seqs, seq0.x, p.batch_seqs < 0.0);
  if (p.mode == 0u) {
    den = select(p.batch_tokens, tok0.x, p.batch_tokens < 0.0);
  }
  let ok = den != 0.0 && p.horizon != 0.0;
  let scale = select(0.0, p.dp / (den * p.horizon), ok);
  if (lid.x == 0u) {
    let inv_tok = select(0.0, 1.0 / tok0.x, tok0.x > 0.0);
    var total = 0.0;
    for (var j = 1u; j < 8u; j++) {
      let q = j / 4u;
      let r = j % 4u;
      let sv = select(seq0, seq1, q == 1u)[r];
      let tv = select(tok0, tok1, q == 1u)[r];
      let stat = select(tv * inv_tok, sv * scale, ((p.agg_bits >> j) & 1u) == 1u);
      total += p.coef[q][r] * stat;
      if (j <= p.nstats) {
        stats[j - 1u] = stat;
      }
    }
    loss[0] = total;
  }
  for (var b = lid.x; b < p.rows; b += WG) {
    let n = partials[2u * b].x;
    row_w[b] = select(0.0, select(1.0, 1.0 / n, p.mode == 2u) * scale, n > 0.0);
  }
}
