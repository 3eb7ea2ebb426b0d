// Fused log-softmax + gather + entropy over the vocabulary, one workgroup per row, ONE pass over
// the logits: each invocation keeps an online (max m, s = sum e^(x-m), t = sum e^(x-m) (x-m))
// over its strided slice of the row, then the workgroup merges the triples. Keeping t relative to
// the running max (rather than sum p*x) keeps the entropy exact when logits are large and the
// distribution is peaked. With x' = x / temperature:
//   lse = m + log s,  log p(target) = x'[target] - lse,  H = log s - t / s.
// The [N, V] probabilities never exist; the backward recomputes p = exp(x' - lse) per element.
// Row index = wid.y * nwg.x + wid.x so the grid can fold to 2-D; backward is a flat 1-D grid.

#include "grid.wgsl"
#include "logprob_params.wgsl"

#const WG: u32
const WITH_ENTROPY: bool = true;
// Below any finite logit, but finite: exp(LOWEST - m) is 0 and (LOWEST - m) * 0 is 0, not NaN.
const LOWEST: f32 = -3.0e38;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;

// forward: out [N] or [2, N] (row 0 log p, row 1 entropy); saved [2, N] (lse, entropy)
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> saved_out: array<f32>;

// backward: saved [2, N], gout [N] or [2, N] like out, dlogits [N, V]
@group(0) @binding(3) var<storage, read> saved: array<f32>;
@group(0) @binding(4) var<storage, read> gout: array<f32>;
@group(0) @binding(5) var<storage, read_write> dlogits: array<f32>;

var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_s: array<f32, WG>;
var<workgroup> red_t: array<f32, WG>;

struct Online {
  m: f32,
  s: f32,
  t: f32,
}

// Merges two partial (m, s, t) states; t is kept relative to each state's own max.
fn merge(a: Online, b: Online) -> Online {
  let m = max(a.m, b.m);
  let ea = exp(a.m - m);
  let eb = exp(b.m - m);
  var t = 0.0;
  if (WITH_ENTROPY) {
    t = ea * (a.t + (a.m - m) * a.s) + eb * (b.t + (b.m - m) * b.s);
  }
  return Online(m, ea * a.s + eb * b.s, t);
}

@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
           @builtin(local_invocation_id) lid: vec3u) {
  let row = flat_group(wid, nwg);
  // Uniform per workgroup, so the barriers below stay in uniform control flow.
  if (row >= p.rows) {
    return;
  }
  let base = row * p.vocab;
  var st = Online(LOWEST, 0.0, 0.0);
  for (var v = lid.x; v < p.vocab; v += WG) {
    let x = logits[base + v] / p.temperature;
    if (x > st.m) {
      let d = st.m - x;
      let a = exp(d);
      if (WITH_ENTROPY) {
        st.t = a * (st.t + d * st.s);
      }
      st.s = st.s * a + 1.0;
      st.m = x;
    } else {
      let d = x - st.m;
      let e = exp(d);
      st.s += e;
      if (WITH_ENTROPY) {
        // e == 0 for a -inf logit, where e * d would be NaN.
        st.t += select(0.0, e * d, e > 0.0);
      }
    }
  }
  red_m[lid.x] = st.m;
  red_s[lid.x] = st.s;
  red_t[lid.x] = st.t;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k >> 1u) {
    if (lid.x < k) {
      let r = merge(Online(red_m[lid.x], red_s[lid.x], red_t[lid.x]),
                    Online(red_m[lid.x + k], red_s[lid.x + k], red_t[lid.x + k]));
      red_m[lid.x] = r.m;
      red_s[lid.x] = r.s;
      red_t[lid.x] = r.t;
    }
    workgroupBarrier();
  }
  if (lid.x == 0u) {
    let log_s = log(red_s[0]);
    let lse = red_m[0] + log_s;
    let tgt = targets[row];
    var lp = 0.0;
    if (tgt >= 0 && u32(tgt) < p.vocab) {
      lp = logits[base + u32(tgt)] / p.temperature - lse;
    } else if (tgt != -100) {
      // NaN, built at run time (Chrome rejects a constant NaN): a bad target is a bug upstream
      lp = bitcast<f32>(u32(tgt) | 0x7fc00000u);
    }
    out[row] = lp;
    saved_out[row] = lse;
    if (WITH_ENTROPY) {
      let h = log_s - red_t[0] / red_s[0];
      out[p.rows + row] = h;
      saved_out[p.rows + row] = h;
    }
  }
}

// d x_v = (g_lp (1[v = target] - p_v) + g_ent (-p_v (log p_v + H))) / temperature, one element per
// invocation; ignored rows (target -100) take no log-prob gradient.
@compute @workgroup_size(WG)
fn backward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
            @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= p.rows * p.vocab) {
    return;
  }
  let row = i / p.vocab;
  let v = i - row * p.vocab;
  let logp = logits[i] / p.temperature - saved[row];
  let prob = exp(logp);
  let tgt = targets[row];
  var d = 0.0;
  if (tgt >= 0) {
    d = gout[row] * (select(0.0, 1.0, u32(tgt) == v) - prob);
  }
  if (WITH_ENTROPY) {
    d -= gout[p.rows + row] * prob * (logp + saved[p.rows + row]);
  }
  dlogits[i] = d / p.temperature;
}
