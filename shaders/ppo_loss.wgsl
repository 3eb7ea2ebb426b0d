// PPO policy losses (src/algos/policy_loss.ts, actor_loss.ts) in two passes plus a backward.
//   policy_rows: one workgroup per sequence, per valid token, by loss_mode:
//     vanilla: ratio = exp(clamp(logp - old, -20, 20)); L1 = -A ratio; L2 = -A clamp(ratio, 1-lo, 1+hi)
//              L = max(L1, L2), and for A < 0 L = min(L, -A c) (dual clip)
//     gspo:    the row's log-ratio s = sum m (logp - old) / max(sum m, 1) first (a reduction over the
//              row), then per token ratio = exp(min(s, 10)) and the same L1/L2 clip, no dual clip.
//              The token log-ratio s + logp - sg(logp) has the value s and the gradient 1, so
//              dL/dlogp_t = -A ratio on the unclipped branch: no term through the row mean.
//   summed over the valid tokens of the row into partials [B, 2] vec4:
//     (count, L, clipped, -log-ratio), (dual-clipped, entropy, kl, s)
//   ppo_loss_finish.wgsl then aggregates rows into the loss, the stats and row_w [B] vec4
//   (w_pg, w, s, 0): every loss_agg_mode is linear in L, loss = sum_t w_pg(row) L_t + ..., and
//   gspo's pg loss has its own mode (seq-mean-token-mean) while entropy and KL use loss_agg_mode.
//   policy_grad: d loss / d logp = g_loss (w_pg dL/dlogp + w kl_coef dkl/dlogp), 0 when masked.
//   entropy_grad: d loss / d entropy = -g_loss w ent_coef, 0 when masked.

#include "grid.wgsl"

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
  loss_mode: u32, // 0 vanilla, 1 gspo (GPU_POLICY_LOSSES in src/algos/gpu/ppo_loss.ts)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logp: array<f32>;
@group(0) @binding(2) var<storage, read> old_logp: array<f32>;
@group(0) @binding(3) var<storage, read> adv: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<MaskT>;

// policy_rows: entropy and ref log-probs (the log-prob buffer stands in when absent), partials
@group(0) @binding(5) var<storage, read> entropy: array<f32>;
@group(0) @binding(6) var<storage, read> ref_logp: array<f32>;
@group(0) @binding(7) var<storage, read_write> partials: array<vec4<f32>>;

// policy_grad: ref at 6, then row weights, the loss gradient [1] and the output
@group(0) @binding(5) var<storage, read> row_w: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> g_loss: array<f32>;
@group(0) @binding(8) var<storage, read_write> g_logp: array<f32>;

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
  clipped: f32,
  lower: f32,
  neg_kl: f32,
}

// `seq_lr` is the row's log-ratio (gspo only).
fn pg_token(i: u32, seq_lr: f32) -> Token {
  let a = adv[i];
  var ratio: f32;
  var d_ratio: f32;
  var neg_kl: f32;
  if (p.loss_mode == 1u) {
    ratio = exp(min(seq_lr, 10.0));
    d_ratio = select(0.0, ratio, seq_lr <= 10.0);
    neg_kl = -(logp[i] - old_logp[i]); // verl's gspo reports the unclamped log-ratio
  } else {
    let raw = logp[i] - old_logp[i];
    let nkl = clamp(raw, -20.0, 20.0);
    ratio = exp(nkl);
    d_ratio = select(0.0, ratio, raw >= -20.0 && raw <= 20.0);
    neg_kl = -nkl;
  }
  let l1 = -a * ratio;
  let g1 = -a * d_ratio;
  let inside = ratio >= 1.0 - p.clip_low && ratio <= 1.0 + p.clip_high;
  let l2 = -a * clamp(ratio, 1.0 - p.clip_low, 1.0 + p.clip_high);
  let is_clipped = l2 > l1;
  var t = Token(l1, g1, 0.0, 0.0, neg_kl);
  if (is_clipped) {
    t.loss = l2;
    t.grad = select(0.0, g1, inside);
    t.clipped = 1.0;
  }
  let l3 = -a * p.clip_c;
  if (p.loss_mode == 0u && a < 0.0 && t.loss > l3) {
    t.loss = l3;
    t.grad = 0.0;
    t.lower = 1.0;
  }
  return t;
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
  var seq_lr = 0.0;
  if (p.loss_mode == 1u) {
    var s = vec4<f32>(0.0);
    for (var c = lid.x; c < p.cols; c += WG) {
      let i = row * p.cols + c;
      if (mask[i] != MaskT(0)) {
        s += vec4<f32>(logp[i] - old_logp[i], 1.0, 0.0, 0.0);
      }
    }
    s = wg_sum4(s, lid.x);
    seq_lr = s.x / max(s.y, 1.0);
  }
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  for (var c = lid.x; c < p.cols; c += WG) {
    let i = row * p.cols + c;
    if (mask[i] == MaskT(0)) {
      continue; // padding may hold garbage (NaN included); it never reaches the sums
    }
    let t = pg_token(i, seq_lr);
    acc0 += vec4<f32>(1.0, t.loss, t.clipped, t.neg_kl);
    var ent = 0.0;
    if (p.has_entropy == 1u) {
      ent = entropy[i];
    }
    var kl = 0.0;
    if (p.use_kl == 1u) {
      kl = kl_value(logp[i] - ref_logp[i]);
    }
    acc1 += vec4<f32>(t.lower, ent, kl, 0.0);
  }
  acc0 = wg_sum4(acc0, lid.x);
  acc1 = wg_sum4(acc1, lid.x);
  if (lid.x == 0u) {
    partials[2u * row] = acc0;
    partials[2u * row + 1u] = vec4<f32>(acc1.xyz, seq_lr);
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
    g = w.x * pg_token(i, w.z).grad;
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
