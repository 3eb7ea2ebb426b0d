// PPO policy losses (src/algos/policy_losses/*.ts, actor_loss.ts) in two passes plus a backward.
//   policy_rows: one workgroup per sequence. gspo and geo_mean first reduce the row; then every
//   valid token t gets its loss L_t, dL_t/dlogp_t and three statistics c2 (pg_clipfrac),
//   c3 (ppo_kl), c4 (pg_clipfrac_lower), by loss_mode (x = logp - old, x20 = clamp(x, -20, 20),
//   r20 = exp(x20), clip(r) = clamp(r, 1 - lo, 1 + hi), ppo(r) = max(-A r, -A clip(r))):
//     0 vanilla:  ppo(r20), and for A < 0 min(., -A c) (dual clip)
//     1 gspo:     s = sum m x / max(sum m, 1) over the row first; ppo(exp(min(s, 10))). The token
//                 log-ratio s + logp - sg(logp) has the value s and the gradient 1.
//     2 sapo:     -A sigmoid(tau (r20 - 1)) 4 / tau, tau = A > 0 ? tau_pos : tau_neg
//     3 gpg:      -A logp
//     4 clip_cov: ppo(exp(x)) and 0 on the chosen tokens
//     5 kl_cov:   -A exp(x) + cov_coef |x| on the chosen tokens
//     6 geo_mean: the row's L_b = -mean(A) exp(mean(xc)), xc = sgn(A) min(sgn(A) x, sgn(A) clamp(x,
//                 -lo, hi)), taken once per row; dL_b/dlogp_t = L_b / n_b where the clip passes it
//     7 cispo:    -sg(clip(r20)) A logp
//     8 reinforce: -sg(w) A logp, w = min(r20, C) per token (is_level 1), min(exp(clamp(sum m x
//                 over the row, -20, 20)), C) per sequence (is_level 2, the row sum first), or 1
//   clip_cov and kl_cov read their chosen tokens from tok (1 = chosen), which ppo_loss_cov.wgsl
//   filled; every mode then writes dL_t/dlogp_t (before aggregation) to tok, 0 on padding, so the
//   backward needs neither the old log-probs nor the advantages. The row sums go to partials
//   [B, 2] vec4: (count, L, c2, c3), (c4, entropy, kl, 0).
//   ppo_loss_finish.wgsl then aggregates rows into the loss, the stats and row_w [B] vec4
//   (w_pg, w, ., .): every loss_agg_mode is linear in L, loss = sum_t w_pg(row) L_t + ..., and the
//   pg loss may have its own mode (gspo and sapo: seq-mean-token-mean; geo_mean: a mean over rows)
//   while entropy and KL use loss_agg_mode.
//   policy_grad: d loss / d logp = g_loss (w_pg tok + w kl_coef dkl/dlogp), 0 when masked.
//   entropy_grad: d loss / d entropy = -g_loss w ent_coef, 0 when masked.

#include "grid.wgsl"
#include "sigmoid.wgsl"

#const WG: u32
alias MaskT = i32;

struct Params {
  rows: u32,
  cols: u32,
  clip_low: f32,
  clip_high: f32,
  clip_c: f32,
  kl_type: u32, // 0 kl (k1), 1 abs, 2 mse (k2), 3 low_var_kl (k3)
  kl_straight: u32, // 1 for the `+` types: forward of kl_type, gradient of k2
  use_kl: u32,
  has_entropy: u32,
  kl_coef: f32,
  ent_coef: f32,
  loss_mode: u32, // GPU_POLICY_LOSSES codes (src/algos/gpu/ppo_loss_modes.ts)
  tau_pos: f32,
  tau_neg: f32,
  cov_coef: f32, // kl_cov's ppo_kl_coef
  is_level: u32, // reinforce: 0 no IS weights, 1 token, 2 sequence
  is_threshold: f32, // reinforce: C, the weights' upper bound
  _p0: u32,
  _p1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;

// policy_rows
@group(0) @binding(1) var<storage, read> logp: array<f32>;
@group(0) @binding(2) var<storage, read> old_logp: array<f32>;
@group(0) @binding(3) var<storage, read> adv: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<MaskT>;
@group(0) @binding(5) var<storage, read> entropy: array<f32>; // the log-probs stand in when absent
@group(0) @binding(6) var<storage, read> ref_logp: array<f32>; // likewise
@group(0) @binding(7) var<storage, read_write> partials: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> tok: array<f32>;

// policy_grad: logp at 1, mask at 4, ref_logp at 6, and
@group(0) @binding(2) var<storage, read> tok_g: array<f32>;
@group(0) @binding(3) var<storage, read> g_loss: array<f32>;
@group(0) @binding(5) var<storage, read> row_w: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> g_logp: array<f32>;

// entropy_grad: mask, row weights, loss gradient, output
@group(0) @binding(1) var<storage, read> mask_e: array<MaskT>;
@group(0) @binding(2) var<storage, read> row_w_e: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> g_loss_e: array<f32>;
@group(0) @binding(4) var<storage, read_write> g_ent: array<f32>;

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

struct Token {
  loss: f32,
  grad: f32, // d loss / d logp of this token, before aggregation
  c2: f32, // pg_clipfrac
  c3: f32, // ppo_kl
  c4: f32, // pg_clipfrac_lower
}

fn clip_r(r: f32) -> f32 {
  return clamp(r, 1.0 - p.clip_low, 1.0 + p.clip_high);
}

// max(-A r, -A clip(r)) as (loss, d/dlogp, clipped) with torch's gradient: -A dr on the first
// branch, and on the second inside the clip range (where both branches are equal).
fn ppo_clip(a: f32, r: f32, dr: f32) -> vec3<f32> {
  let l1 = -a * r;
  let l2 = -a * clip_r(r);
  if (l2 > l1) {
    return vec3<f32>(l2, select(0.0, -a * dr, r == clip_r(r)), 1.0);
  }
  return vec3<f32>(l1, -a * dr, 0.0);
}

// xc of geo_mean: the log-ratio clipped on the side the advantage's sign selects.
fn geo_clip(x: f32, a: f32) -> f32 {
  let s = sign(a);
  return s * min(s * x, s * clamp(x, -p.clip_low, p.clip_high));
}

// `row`: gspo's sequence log-ratio, geo_mean's L_b / n_b, reinforce's sequence sum of x.
fn pg_token(i: u32, row: f32) -> Token {
  let a = adv[i];
  let x = logp[i] - old_logp[i];
  let x20 = clamp(x, -20.0, 20.0);
  let r20 = exp(x20);
  let dr20 = select(0.0, r20, x >= -20.0 && x <= 20.0);
  switch (p.loss_mode) {
    case 1u: {
      let r = exp(min(row, 10.0));
      let c = ppo_clip(a, r, select(0.0, r, row <= 10.0));
      return Token(c.x, c.y, c.z, -x, 0.0);
    }
    case 2u: {
      let tau = select(p.tau_neg, p.tau_pos, a > 0.0);
      let s = sigmoid(tau * (r20 - 1.0));
      return Token(-s * (4.0 / tau) * a, -a * 4.0 * s * (1.0 - s) * dr20, 0.0, -x20, 0.0);
    }
    case 3u: {
      return Token(-a * logp[i], -a, 0.0, 0.0, 0.0);
    }
    case 4u: {
      if (tok[i] != 0.0) {
        return Token(0.0, 0.0, 1.0, -x, 0.0);
      }
      let r = exp(x);
      let c = ppo_clip(a, r, r);
      return Token(c.x, c.y, 0.0, -x, 0.0);
    }
    case 5u: {
      let r = exp(x);
      let k = select(0.0, p.cov_coef, tok[i] != 0.0);
      return Token(-a * r + k * abs(x), -a * r + k * sign(x), 0.0, abs(x), 0.0);
    }
    case 6u: {
      let clipped = x < -p.clip_low || x > p.clip_high;
      let passes = (a > 0.0 && x <= p.clip_high) || (a < 0.0 && x >= -p.clip_low);
      return Token(0.0, select(0.0, row, passes), select(0.0, 1.0, clipped && a > 0.0), -x,
                   select(0.0, 1.0, clipped && a < 0.0));
    }
    case 7u: {
      let w = clip_r(r20);
      return Token(-w * a * logp[i], -w * a, select(0.0, 1.0, r20 != w), -x20, 0.0);
    }
    case 8u: {
      var w = 1.0;
      if (p.is_level == 1u) {
        w = min(r20, p.is_threshold);
      } else if (p.is_level == 2u) {
        w = min(exp(clamp(row, -20.0, 20.0)), p.is_threshold);
      }
      return Token(-w * a * logp[i], -w * a, 0.0, -x, 0.0);
    }
    default: {
      let c = ppo_clip(a, r20, dr20);
      var t = Token(c.x, c.y, c.z, -x20, 0.0);
      let l3 = -a * p.clip_c;
      if (a < 0.0 && t.loss > l3) {
        t.loss = l3;
        t.grad = 0.0;
        t.c4 = 1.0;
      }
      return t;
    }
  }
}

fn kl_value(x: f32) -> f32 {
  switch (p.kl_type) {
    case 0u: { return x; }
    case 1u: { return abs(x); }
    case 2u: { return 0.5 * x * x; }
    default: {
      let u = clamp(-x, -20.0, 20.0);
      return clamp(exp(u) - u - 1.0, -10.0, 10.0);
    }
  }
}

// What autograd sees: torch's clamp passes the gradient only inside its (inclusive) range.
fn kl_grad(x: f32) -> f32 {
  if (p.kl_straight == 1u) {
    return x;
  }
  switch (p.kl_type) {
    case 0u: { return 1.0; }
    case 1u: { return sign(x); }
    case 2u: { return x; }
    default: {
      let u = -x;
      if (u < -20.0 || u > 20.0 || exp(u) - u - 1.0 > 10.0) {
        return 0.0;
      }
      return 1.0 - exp(u);
    }
  }
}

@compute @workgroup_size(WG)
fn policy_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) {
    return; // uniform per workgroup, so the barriers below stay in uniform control flow
  }
  var row_val = 0.0; // gspo: the mean log-ratio; geo_mean: L_b / n_b; reinforce: the sum
  var row_loss = 0.0; // geo_mean: L_b
  let seq_is = p.loss_mode == 8u && p.is_level == 2u;
  if (p.loss_mode == 1u || p.loss_mode == 6u || seq_is) {
    var s = vec4<f32>(0.0); // (sum x, count, sum xc, sum A)
    for (var c = lid.x; c < p.cols; c += WG) {
      let i = row * p.cols + c;
      if (mask[i] != MaskT(0)) {
        let x = logp[i] - old_logp[i];
        s += vec4<f32>(x, 1.0, geo_clip(x, adv[i]), adv[i]);
      }
    }
    s = wg_sum4(s, lid.x);
    let n = max(s.y, 1.0);
    row_val = select(s.x / n, s.x, seq_is);
    if (p.loss_mode == 6u) {
      row_loss = -(s.w / n) * exp(s.z / n);
      row_val = row_loss / n;
    }
  }
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  for (var c = lid.x; c < p.cols; c += WG) {
    let i = row * p.cols + c;
    if (mask[i] == MaskT(0)) {
      tok[i] = 0.0;
      continue; // padding may hold garbage (NaN included); it never reaches the sums
    }
    let t = pg_token(i, row_val);
    tok[i] = t.grad;
    acc0 += vec4<f32>(1.0, t.loss, t.c2, t.c3);
    var ent = 0.0;
    if (p.has_entropy == 1u) {
      ent = entropy[i];
    }
    var kl = 0.0;
    if (p.use_kl == 1u) {
      kl = kl_value(logp[i] - ref_logp[i]);
    }
    acc1 += vec4<f32>(t.c4, ent, kl, 0.0);
  }
  acc0 = wg_sum4(acc0, lid.x);
  acc1 = wg_sum4(acc1, lid.x);
  if (lid.x == 0u) {
    if (p.loss_mode == 6u) {
      acc0.y = row_loss;
    }
    partials[2u * row] = acc0;
    partials[2u * row + 1u] = vec4<f32>(acc1.xyz, 0.0);
  }
}

@compute @workgroup_size(WG)
fn policy_grad(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.rows * p.cols) {
    return;
  }
  var g = 0.0;
  if (mask[i] != MaskT(0)) {
    let w = row_w[i / p.cols];
    g = w.x * tok_g[i];
    if (p.use_kl == 1u) {
      g += w.y * p.kl_coef * kl_grad(logp[i] - ref_logp[i]);
    }
    g *= g_loss[0];
  }
  g_logp[i] = g;
}

@compute @workgroup_size(WG)
fn entropy_grad(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.rows * p.cols) {
    return;
  }
  var g = 0.0;
  if (mask_e[i] != MaskT(0)) {
    g = -p.ent_coef * g_loss_e[0] * row_w_e[i / p.cols].y;
  }
  g_ent[i] = g;
}
