// Streaming logsumexp of a row, shared by softmax and cross_entropy: each invocation folds its
// strided slice into a (max, sum of exp(x - max)) pair with lse_merge, then lse_tree merges the
// pairs of the workgroup. `lowest` is -inf from TS (WGSL has no literal for it) and marks an
// empty side, so masked (-inf) entries contribute nothing. Needs the includer's WG.

var<workgroup> lse_m: array<f32, WG>;
var<workgroup> lse_s: array<f32, WG>;

// Merges two (max, sum of exp(v - max)) pairs; an empty side has max = lowest.
fn lse_merge(a: vec2f, b: vec2f, lowest: f32) -> vec2f {
  if (a.x <= lowest) { return b; }
  if (b.x <= lowest) { return a; }
  let m = max(a.x, b.x);
  return vec2f(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

// The workgroup's merged pair, the same in every invocation (call from uniform control flow).
fn lse_tree(acc: vec2f, lid: u32, lowest: f32) -> vec2f {
  lse_m[lid] = acc.x;
  lse_s[lid] = acc.y;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      let a = vec2f(lse_m[lid], lse_s[lid]);
      let r = lse_merge(a, vec2f(lse_m[lid + s], lse_s[lid + s]), lowest);
      lse_m[lid] = r.x;
      lse_s[lid] = r.y;
    }
    workgroupBarrier();
  }
  return vec2f(lse_m[0], lse_s[0]);
}
