// The online log-sum-exp (and entropy) state of a row of logits x, shared by logprob and
// lm_head_logprob: the running max m, s = Σ e^(x-m) and t = Σ e^(x-m) (x-m), so that
//   lse = m + log s,  H = log s - t / s.
// Keeping t relative to the running max (rather than Σ p x) keeps the entropy exact when logits
// are large and the distribution is peaked; WITH_ENTROPY false leaves t at 0. A state starts as
// Online(LOWEST, 0, 0); fold adds one logit, merge joins two states. Both also return the
// exponentials they took, so an includer can carry further sums relative to the same max.
// dlogit is the backward of log p(target) and H through one logit.

const WITH_ENTROPY: bool = true;
// Below any finite logit, but finite: exp(LOWEST - m) is 0 and (LOWEST - m) * 0 is 0, not NaN.
const LOWEST: f32 = -3.0e38;

struct Online {
  m: f32,
  s: f32,
  t: f32,
}

// A state after one more logit, and the one exponential that cost: k = e^(m_old - x), the
// factor that carried the old sums onto x, when x is the new max (x's own term is then 1);
// otherwise k = e^(x - m), x's own term.
struct Folded {
  st: Online,
  k: f32,
}

fn fold(st: Online, x: f32) -> Folded {
  if (x > st.m) {
    let d = st.m - x;
    let a = exp(d);
    var t = st.t;
    if (WITH_ENTROPY) {
      t = a * (st.t + d * st.s);
    }
    return Folded(Online(x, st.s * a + 1.0, t), a);
  }
  let d = x - st.m;
  let e = exp(d);
  var t = st.t;
  if (WITH_ENTROPY) {
    // e == 0 for a -inf logit, where e * d would be NaN.
    t += select(0.0, e * d, e > 0.0);
  }
  return Folded(Online(st.m, st.s + e, t), e);
}

// Two states merged, and the factors ea = e^(a.m - m), eb = e^(b.m - m) that carried each onto
// the common max m.
struct Merged {
  st: Online,
  ea: f32,
  eb: f32,
}

fn merge_scaled(a: Online, b: Online) -> Merged {
  let m = max(a.m, b.m);
  let ea = exp(a.m - m);
  let eb = exp(b.m - m);
  var t = 0.0;
  if (WITH_ENTROPY) {
    t = ea * (a.t + (a.m - m) * a.s) + eb * (b.t + (b.m - m) * b.s);
  }
  return Merged(Online(m, ea * a.s + eb * b.s, t), ea, eb);
}

fn merge(a: Online, b: Online) -> Online {
  return merge_scaled(a, b).st;
}

// The gradient through one scaled logit x'_v (the caller divides by the temperature for x_v),
// with log p_v = logp: g_lp (1[v = target] - p_v) - g_ent p_v (log p_v + H), where g_lp is the
// upstream gradient of log p(target) (none for an ignored row, target < 0) and g_ent that of
// the entropy H (used only WITH_ENTROPY).
fn dlogit(logp: f32, v: u32, tgt: i32, g_lp: f32, g_ent: f32, h: f32) -> f32 {
  let prob = exp(logp);
  var d = 0.0;
  if (tgt >= 0) {
    d = g_lp * (select(0.0, 1.0, u32(tgt) == v) - prob);
  }
  if (WITH_ENTROPY) {
    d -= g_ent * prob * (logp + h);
  }
  return d;
}
