// What both attention backward kernels add to attention_common: loads of the upstream gradient
// dO next to q. Needs the includer's binding `dout` (dO, laid out like q), WG and workgroup
// arrays qs, dos.

#include "attention_common.wgsl"

fn do4(base: u32, c4: u32) -> vec4f {
  var x = vec4f();
  for (var e = 0u; e < 4u; e++) { if (4u * c4 + e < D) { x[e] = dout[base + 4u * c4 + e]; } }
  return x;
}

// Query rows rf0 .. rf0 + n - 1 of (b, hk) of q and dO into qs / dos, zero past the last row.
fn load_q_do_tile(rf0: u32, n: u32, b: u32, hk: u32, tid: u32) {
  for (var i = tid; i < n * D4; i += WG) {
    let rf = rf0 + i / D4;
    var x = vec4f();
    var dx = vec4f();
    if (rf < p.rows) {
      let a = q_base(b, hk, rf);
      x = q4(a, i % D4);
      dx = do4(a, i % D4);
    }
    qs[i] = x;
    dos[i] = dx;
  }
}
