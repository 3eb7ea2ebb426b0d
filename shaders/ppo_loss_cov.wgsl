// The tokens clip_cov and kl_cov treat apart (src/algos/policy_losses/cov_select.ts), chosen over
// all n valid tokens of the call by one workgroup:
//   cov_i = (A_i - mean A)(logp_i - mean logp), means over the valid tokens
//   kl_cov:   eligible = valid, key = cov_i in an order-preserving u32 encoding
//   clip_cov: eligible = valid, not clipped by the PPO clip (L2 <= L1), lb < cov_i < ub;
//             key = mix_seed(seed, j), j the token's row-major ordinal among the valid tokens
//   chosen = the k = min(count, #eligible) eligible tokens of largest key, ties to the lower index
// `count` is the quota the TS op computed from the valid-token count (verl's int(ratio * N) rules).
// The k-th largest key is found a byte at a time from the top (4 histogram passes, one bin per
// invocation, so WG is 256); then every key above it is chosen, and the first (row-major) of the
// keys equal to it until k are reached. Each
// invocation reads and writes only its own indices i = lid + WG * chunk, so no storage barrier is
// needed between the passes.
// out[i] = 1.0 for a chosen token, else 0.0 (the policy loss kernel reads it, then overwrites it).

#const WG: u32
alias MaskT = i32;

struct Params {
  n: u32, // tokens of the call, B * C
  mode: u32, // 0 clip_cov, 1 kl_cov
  count: u32, // the quota k before capping at #eligible
  seed: u32,
  lb: f32,
  ub: f32,
  clip_low: f32,
  clip_high: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logp: array<f32>;
@group(0) @binding(2) var<storage, read> old_logp: array<f32>;
@group(0) @binding(3) var<storage, read> adv: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<MaskT>;
@group(0) @binding(5) var<storage, read_write> keys: array<u32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;

var<workgroup> sums: array<vec4<f32>, WG>;
var<workgroup> cnt: array<u32, WG>;
var<workgroup> hist: array<atomic<u32>, 256>; // one bin per byte value; WG must be 256
var<workgroup> pick: vec2<u32>; // (byte, keys above it) of the select pass

fn wg_sum4(v: vec4<f32>, i: u32) -> vec4<f32> {
  sums[i] = v;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k >> 1u) {
    if (i < k) {
      sums[i] = sums[i] + sums[i + k];
    }
    workgroupBarrier();
  }
  return workgroupUniformLoad(&sums[0]);
}

// Sum of one u32 per invocation, the same (uniform) value in every invocation.
fn wg_count(v: u32, i: u32) -> u32 {
  cnt[i] = v;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k >> 1u) {
    if (i < k) {
      cnt[i] = cnt[i] + cnt[i + k];
    }
    workgroupBarrier();
  }
  let total = workgroupUniformLoad(&cnt[0]);
  workgroupBarrier(); // the next call may overwrite cnt[0]
  return total;
}

// Exclusive prefix sum of one u32 per invocation (x) and the workgroup total (y, uniform).
fn wg_scan(v: u32, i: u32) -> vec2<u32> {
  cnt[i] = v;
  workgroupBarrier();
  for (var off = 1u; off < WG; off = off << 1u) {
    var t = 0u;
    if (i >= off) {
      t = cnt[i - off];
    }
    workgroupBarrier();
    cnt[i] = cnt[i] + t;
    workgroupBarrier();
  }
  let incl = cnt[i];
  let total = workgroupUniformLoad(&cnt[WG - 1u]);
  workgroupBarrier();
  return vec2<u32>(incl - v, total);
}

// src/tensor/random.ts mixSeed: a 32-bit hash of (seed, salt).
fn mix_seed(seed: u32, salt: u32) -> u32 {
  var h = seed ^ ((salt + 0x9e3779b9u) * 0x85ebca6bu);
  h = (h ^ (h >> 16u)) * 0x7feb352du;
  h = (h ^ (h >> 15u)) * 0x846ca68bu;
  return h ^ (h >> 16u);
}

// u32 keys ordered as the f32 values (-0 and +0 equal).
fn ordered(x: f32) -> u32 {
  if (x == 0.0) {
    return 0x80000000u;
  }
  let b = bitcast<u32>(x);
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn valid(i: u32) -> bool {
  return i < p.n && mask[i] != MaskT(0);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3u) {
  let t = lid.x;
  var s = vec4<f32>(0.0);
  for (var i = t; i < p.n; i += WG) {
    if (valid(i)) {
      s += vec4<f32>(adv[i], logp[i], 1.0, 0.0);
    }
  }
  s = wg_sum4(s, t);
  let mean_a = s.x / max(s.z, 1.0);
  let mean_lp = s.y / max(s.z, 1.0);

  // keys, eligibility (in out) and the eligible count
  var ordinal = 0u; // valid tokens before this chunk
  var eligible = 0u;
  for (var c = 0u; c < p.n; c += WG) {
    let i = c + t;
    let ok = valid(i);
    let sc = wg_scan(select(0u, 1u, ok), t);
    let j = ordinal + sc.x;
    ordinal += sc.y;
    if (i < p.n) {
      var key = 0u;
      var el = false;
      if (ok) {
        let a = adv[i];
        let cov = (a - mean_a) * (logp[i] - mean_lp);
        if (p.mode == 1u) {
          key = ordered(cov);
          el = true;
        } else {
          let r = exp(logp[i] - old_logp[i]);
          let clipped = -a * clamp(r, 1.0 - p.clip_low, 1.0 + p.clip_high) > -a * r;
          key = mix_seed(p.seed, j);
          el = !clipped && cov > p.lb && cov < p.ub;
        }
      }
      keys[i] = key;
      out[i] = select(0.0, 1.0, el);
      eligible += select(0u, 1u, el);
    }
  }
  let k = min(p.count, wg_count(eligible, t));

  // the k-th largest key, a byte at a time from the top: prefix holds its bytes so far, remaining
  // how many of the tokens sharing them are still to take
  var prefix = 0u;
  var remaining = k;
  for (var d = 4u; d > 0u && k > 0u; d--) {
    let shift = (d - 1u) * 8u;
    let above = select(~((1u << (shift + 8u)) - 1u), 0u, d == 4u); // the bytes fixed so far
    atomicStore(&hist[t], 0u);
    workgroupBarrier();
    for (var i = t; i < p.n; i += WG) {
      if (out[i] != 0.0 && (keys[i] & above) == prefix) {
        atomicAdd(&hist[(keys[i] >> shift) & 255u], 1u);
      }
    }
    workgroupBarrier();
    // invocation t holds byte 255 - t; its inclusive scan counts the keys with that byte or more
    let v = atomicLoad(&hist[255u - t]);
    let sc = wg_scan(v, t);
    let at_least = sc.x + v;
    if (at_least >= remaining && sc.x < remaining) {
      pick = vec2<u32>(255u - t, sc.x);
    }
    let chosen = workgroupUniformLoad(&pick);
    prefix |= chosen.x << shift;
    remaining -= chosen.y;
  }

  var equal_before = 0u; // tokens with key == prefix before this chunk
  for (var c = 0u; c < p.n; c += WG) {
    let i = c + t;
    var el = false;
    var key = 0u;
    if (i < p.n) {
      el = out[i] != 0.0;
      key = keys[i];
    }
    let eq = el && key == prefix;
    let sc = wg_scan(select(0u, 1u, eq), t);
    let j = equal_before + sc.x;
    equal_before += sc.y;
    if (i < p.n) {
      out[i] = select(0.0, 1.0, k > 0u && el && (key > prefix || (eq && j < remaining)));
    }
  }
}
