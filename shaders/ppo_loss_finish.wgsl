// Aggregation of the per-row partial sums of ppo_loss.wgsl / ppo_loss_value.wgsl (verl's agg_loss,
// src/algos/agg.ts) in one workgroup: partials [B, 2] vec4 hold (count, c1, c2, c3), (c4..c7).
//   token-mean:               agg_j = sum_b c_j / N_tok * dp           N_tok = batch_tokens or sum count
//   seq-mean-token-sum:       agg_j = sum_b c_j / G * dp               G = batch_seqs or #rows with count > 0
//   seq-mean-token-mean:      agg_j = sum_b (c_j / count_b) / G * dp
//   seq-mean-token-sum-norm:  agg_j = sum_b c_j / horizon                (neither G nor dp)
//   row-mean (column 1 only): agg_1 = sum_b c_1 / G' * dp      G' = batch_seqs or every row, empty
//                             ones included (geo_mean's c_1 is already its row loss)
// Column 1 (the policy or value loss) is aggregated with its own mode (gspo's and sapo's pg loss is
// always seq-mean-token-mean, geo_mean's a row mean, while the entropy and KL terms follow
// loss_agg_mode); columns 2..6 use `mode`.
// Column j reports agg_j when bit j of agg_bits is set, else the token mean sum_b c_j / sum count;
// loss = sum_{j<=6} coef_j stat_j. Column 7 is no statistic: a per-row value the rows pass hands to
// the backward. Each row gets row_w[b] = (w1, w, c7, 0), where w1 and w
// are d loss / d (token loss) under column 1's mode and under `mode`; the backward kernels read it.
// A zero denominator gives 0 (not NaN), as agg.ts does.

#const WG: u32

struct Params {
  rows: u32,
  mode: u32, // 0 token-mean, 1 seq-mean-token-sum, 2 seq-mean-token-mean, 3 seq-mean-token-sum-norm
  agg_bits: u32,
  nstats: u32,
  batch_tokens: f32, // < 0: count this batch's valid tokens
  batch_seqs: f32, // < 0: count this batch's non-empty rows
  dp: f32,
  horizon: f32,
  mode1: u32, // mode of column 1; also 4 row-mean
  horizon1: f32,
  _p0: u32,
  _p1: u32,
  coef: array<vec4<f32>, 2>, // coef[j / 4][j % 4] for columns j = 0..7 (0 and 7 unused)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> partials: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> loss: array<f32>;
@group(0) @binding(3) var<storage, read_write> stats: array<f32>;
@group(0) @binding(4) var<storage, read_write> row_w: array<vec4<f32>>;

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

// Per-row factor of a mode: seq-mean-token-mean divides each row by its token count.
fn row_factor(mode: u32, count: f32) -> f32 {
  return select(1.0, 1.0 / count, mode == 2u);
}

// dp / (denominator * horizon) of a mode (1 / horizon for seq-mean-token-sum-norm), 0 when a
// denominator is 0.
fn mode_scale(mode: u32, horizon: f32, tokens: f32, seqs: f32) -> f32 {
  var den = select(p.batch_seqs, seqs, p.batch_seqs < 0.0);
  if (mode == 0u) {
    den = select(p.batch_tokens, tokens, p.batch_tokens < 0.0);
  }
  if (mode == 4u) {
    den = select(p.batch_seqs, f32(p.rows), p.batch_seqs < 0.0);
  }
  // seq-mean-token-sum-norm divides by the constant horizon alone (no row count, no dp).
  if (mode == 3u) {
    return select(0.0, 1.0 / horizon, horizon != 0.0);
  }
  return select(0.0, p.dp / (den * horizon), den != 0.0 && horizon != 0.0);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3u) {
  // seq*: per-row contributions (divided by the row count for seq-mean-token-mean), x holds the
  // number of non-empty rows; tok*: plain sums, x holds the token count; one1: column 1 under its
  // own mode.
  var seq0 = vec4<f32>(0.0);
  var seq1 = vec4<f32>(0.0);
  var tok0 = vec4<f32>(0.0);
  var tok1 = vec4<f32>(0.0);
  var one1 = vec4<f32>(0.0);
  for (var b = lid.x; b < p.rows; b += WG) {
    let a = partials[2u * b];
    let c = partials[2u * b + 1u];
    if (a.x > 0.0) {
      let s = row_factor(p.mode, a.x);
      seq0 += vec4<f32>(1.0, a.yzw * s);
      seq1 += c * s;
      tok0 += a;
      tok1 += c;
      one1.x += a.y * row_factor(p.mode1, a.x);
    }
  }
  seq0 = wg_sum4(seq0, lid.x);
  seq1 = wg_sum4(seq1, lid.x);
  tok0 = wg_sum4(tok0, lid.x);
  tok1 = wg_sum4(tok1, lid.x);
  one1 = wg_sum4(one1, lid.x);
  let scale = mode_scale(p.mode, p.horizon, tok0.x, seq0.x);
  let scale1 = mode_scale(p.mode1, p.horizon1, tok0.x, seq0.x);
  if (lid.x == 0u) {
    let inv_tok = select(0.0, 1.0 / tok0.x, tok0.x > 0.0);
    var total = 0.0;
    for (var j = 1u; j < 7u; j++) {
      let q = j / 4u;
      let r = j % 4u;
      var sv = select(seq0, seq1, q == 1u)[r] * scale;
      if (j == 1u) {
        sv = one1.x * scale1;
      }
      let tv = select(tok0, tok1, q == 1u)[r];
      let stat = select(tv * inv_tok, sv, ((p.agg_bits >> j) & 1u) == 1u);
      total += p.coef[q][r] * stat;
      if (j <= p.nstats) {
        stats[j - 1u] = stat;
      }
    }
    loss[0] = total;
  }
  for (var b = lid.x; b < p.rows; b += WG) {
    let n = partials[2u * b].x;
    let w1 = select(0.0, row_factor(p.mode1, n) * scale1, n > 0.0);
    let w = select(0.0, row_factor(p.mode, n) * scale, n > 0.0);
    row_w[b] = vec4<f32>(w1, w, partials[2u * b + 1u].w, 0.0);
  }
}
