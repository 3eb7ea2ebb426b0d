// Tree reductions of one f32 per invocation over a workgroup of WG invocations (a power of two),
// in a fixed order, so a result never depends on scheduling. Every invocation gets the result.
// Call from uniform control flow (they hold barriers). Needs the includer's WG.

var<workgroup> wg_red: array<f32, WG>;

fn wg_sum(v: f32, i: u32) -> f32 {
  wg_red[i] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (i < s) { wg_red[i] = wg_red[i] + wg_red[i + s]; }
    workgroupBarrier();
  }
  let total = wg_red[0];
  workgroupBarrier(); // the next reduction may overwrite wg_red[0]
  return total;
}

fn wg_max(v: f32, i: u32) -> f32 {
  wg_red[i] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (i < s) { wg_red[i] = max(wg_red[i], wg_red[i + s]); }
    workgroupBarrier();
  }
  let m = wg_red[0];
  workgroupBarrier();
  return m;
}
