// What the register-tiled attention kernels (attention_tiled_fwd, attention_tiled_dq,
// attention_tiled_dkv) add to attention_params: a workgroup of TY x TX threads, thread
// (ty, tx) = (tid / TX, tid % TX), each owning a small block of the score tile and a block of
// [rows x column groups tx + j * TX] of its accumulators, so each value a thread reads from
// workgroup memory feeds several multiply-adds. Tiles of q / k / v / dO rows in workgroup memory
// are padded to DP column groups: threads reading different rows at one column group hit
// different banks.

#include "attention_params.wgsl"

#const TY: u32
#const TX: u32
const WG: u32 = TY * TX;
const DP: u32 = D4 + 1u;
const NC: u32 = (D4 + TX - 1u) / TX; // output column groups per thread
const NO_KEY: i32 = -1; // lim of a row past the end: it sees no key
const ALL_KEYS: i32 = 2147483647;

// Column group c of query row rf of (b, hk) in q, zero past the last row.
fn q_row4(b: u32, hk: u32, rf: u32, c: u32) -> vec4f {
  if (rf >= p.rows) { return vec4f(); }
  return q4(q_base(b, hk, rf), c);
}

// The last key position query row rf may see (keys past kvLength or masked are checked apart).
fn row_lim(rf: u32) -> i32 {
  if (rf >= p.rows) { return NO_KEY; }
  return select(ALL_KEYS, p.off + i32(rf / p.g), p.causal != 0u);
}

// Keys a workgroup of query rows rf0 .. rf0 + n - 1 may see end before this (causal cut).
fn key_end(rf0: u32, n: u32, kend: u32) -> u32 {
  if (p.causal == 0u) { return kend; }
  let t_last = i32(min(rf0 + n, p.rows) - 1u) / i32(p.g);
  return u32(clamp(p.off + t_last + 1, 0, i32(kend)));
}
