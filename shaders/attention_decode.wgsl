// Decode attention: a few query rows (R = T * G, the G query heads of one kv head at T positions)
// against a long key range, parallel over keys. One workgroup owns (key split wid.x, kv head
// wid.y, batch wid.z) and the split's CH keys; the R rows' q sit in workgroup memory.
//   0. q to workgroup memory, and where each key's k and v rows start to offs (the block table
//      is read once per key, not per row and pass);
//   1. scores: invocation i takes key i / R and row i % R (the R rows of a key read its k row
//      together, its loads issued at once), written to ss;
//   2. row max, then probabilities and their sum, over ML lanes per row and a serial merge;
//   3. P @ V: invocation (kp, r, c) sums the keys kp, kp + KP, ... for row r and vec4 column
//      group c (consecutive invocations read consecutive columns of one v row), the KP partial
//      sums then merged in workgroup memory.
// With one split the output and row logsumexp go straight to o / lse; with several each split
// writes its normalised output and logsumexp ([nsplit, ...]) for attention_combine to merge.
// k and v are read as words: f32 bits, or PACKED IEEE halves two per word (pack2x16float, element
// 2m in the low half; D % 4 == 0), a KV cache of half the bytes on any adapter.
// PAGED: k and v are pools of blocks [numBlocks, S, Hkv, D] (S = p.s keys per block) and the mask
// binding holds per batch row [length, block ids...] (p.mask_stride per row): key s of row b is
// row s % S of block ids[s / S], and the row sees its first `length` keys (rows are ragged).

#include "attention_params.wgsl"

#const R: u32
#const CH: u32
#const WG: u32
#const PACKED: bool
#const PAGED: bool
const QS: u32 = D4 + 1u; // row stride of qs: the R rows read by one key land in distinct banks
const ML: u32 = min(WG / R, 32u); // lanes per row of the softmax passes
const RC: u32 = R * D4; // (row, column group) pairs of the P @ V pass
const KP: u32 = WG / RC; // key-parallel groups of the P @ V pass (the op checks RC <= WG)
#const KG_MAX: u32
const KG: u32 = min(min(D4, KG_MAX), 16u); // vec4s of a k row `score` loads together (its 16 copies)

@group(0) @binding(2) var<storage, read> k: array<u32>;
@group(0) @binding(3) var<storage, read> v: array<u32>;
@group(0) @binding(5) var<storage, read_write> o: array<f32>; // [nsplit, B, T, Hq, D]
@group(0) @binding(6) var<storage, read_write> lse: array<f32>; // [nsplit, B, Hq, T]

var<workgroup> qs: array<vec4f, R * QS>;
var<workgroup> ss: array<f32, R * CH>; // scores, then probabilities
var<workgroup> red: array<f32, R * ML>;
var<workgroup> rowm: array<f32, R>;
var<workgroup> rowl: array<f32, R>;
var<workgroup> pv: array<vec4f, KP * RC>;
var<workgroup> offs: array<u32, CH>; // where each key's k and v rows start (kv_at)

// Word i of the keys (is_v false) or the values.
fn kv_word(is_v: bool, i: u32) -> u32 {
  if (is_v) { return v[i]; }
  return k[i];
}

// Columns 4 * c4 .. 4 * c4 + 3 of the k or v row starting at element `base`, zero past D.
fn kv4(is_v: bool, base: u32, c4: u32) -> vec4f {
  if (PACKED) {
    let w = base / 2u + 2u * c4;
    return vec4f(unpack2x16float(kv_word(is_v, w)), unpack2x16float(kv_word(is_v, w + 1u)));
  }
  if (D % 4u == 0u) {
    let w = base + 4u * c4;
    return bitcast<vec4f>(vec4u(kv_word(is_v, w), kv_word(is_v, w + 1u), kv_word(is_v, w + 2u),
                                kv_word(is_v, w + 3u)));
  }
  var x = vec4f();
  for (var e = 0u; e < 4u; e++) {
    if (4u * c4 + e < D) { x[e] = bitcast<f32>(kv_word(is_v, base + 4u * c4 + e)); }
  }
  return x;
}

// Row r's score against the k row at `a`, added in column order. The loads of up to KG vec4s are
// written out ahead of their dots so they are in flight together: as one loop of load-then-dot,
// NVIDIA's compiler waited on each load in turn (a chain of D4 loads per score).
fn score(r: u32, a: u32) -> f32 {
  var sdot = 0.0;
  for (var c0 = 0u; c0 < D4; c0 += KG) {
#unroll e 16
    let k$e = kv4(false, a, min(c0 + $e % KG, D4 - 1u));
#end
#unroll e 16
    if ($e < KG) { if (c0 + $e < D4) { sdot += dot(qs[r * QS + c0 + $e], k$e); } }
#end
  }
  return sdot;
}

// Offset in k / v of key s of kv head hk in batch row b (through the block table when PAGED).
fn kv_at(b: u32, hk: u32, s: u32) -> u32 {
  if (PAGED) {
    let blk = u32(mask[b * p.mask_stride + 1u + s / p.s]);
    return kv_base(blk, hk, s % p.s);
  }
  return kv_base(b, hk, s);
}

// Whether batch row b sees key s (PAGED: s below the row's own length).
fn key_at(b: u32, s: u32) -> bool {
  if (PAGED) { return s < p.l && i32(s) < mask[b * p.mask_stride]; }
  return key_ok(b, s);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let split = wid.x;
  let hk = wid.y;
  let b = wid.z;
  let kbeg = split * p.chunk;
  var kend = min(p.l, kbeg + p.chunk);
  if (p.causal != 0u) {
    // No row sees past the last query position.
    kend = u32(clamp(p.off + i32((R - 1u) / p.g) + 1, 0, i32(kend)));
  }
  let nk = select(0u, kend - kbeg, kend > kbeg);

  for (var i = tid; i < RC; i += WG) {
    let r = i / D4;
    qs[r * QS + i % D4] = q4(q_base(b, hk, r), i % D4);
  }
  for (var j = tid; j < nk; j += WG) { offs[j] = kv_at(b, hk, kbeg + j); }
  workgroupBarrier();

  for (var i = tid; i < nk * R; i += WG) {
    let j = i / R;
    let r = i % R;
    let s = kbeg + j;
    let a = offs[j];
    var sc = NEG;
    if (key_at(b, s) && (p.causal == 0u || i32(s) <= p.off + i32(r / p.g))) {
      sc = score(r, a) * p.scale;
    }
    ss[r * CH + j] = sc;
  }
  workgroupBarrier();

  let sr = tid / ML;
  let lane = tid % ML;
  if (sr < R) {
    var mx = NEG;
    for (var j = lane; j < nk; j += ML) { mx = max(mx, ss[sr * CH + j]); }
    red[sr * ML + lane] = mx;
  }
  workgroupBarrier();
  if (tid < R) {
    var mx = NEG;
    for (var i = 0u; i < ML; i++) { mx = max(mx, red[tid * ML + i]); }
    rowm[tid] = mx;
  }
  workgroupBarrier();
  if (sr < R) {
    let mx = rowm[sr];
    var sum = 0.0;
    for (var j = lane; j < nk; j += ML) {
      let sc = ss[sr * CH + j];
      let pk = select(0.0, exp(sc - mx), sc > MASKED);
      ss[sr * CH + j] = pk;
      sum += pk;
    }
    red[sr * ML + lane] = sum;
  }
  workgroupBarrier();
  if (tid < R) {
    var sum = 0.0;
    for (var i = 0u; i < ML; i++) { sum += red[tid * ML + i]; }
    rowl[tid] = sum;
  }
  workgroupBarrier();

  let c = tid % D4;
  let r = (tid / D4) % R;
  let kp = tid / RC;
  var acc = vec4f();
  if (kp < KP) {
    // Masked keys are selected away, not multiplied by 0: their rows may hold anything. Eight
    // (then four) keys' v rows are loaded before any is added (the loads overlap; the adds keep
    // key order).
    var j = kp;
    for (; j + 7u * KP < nk; j += 8u * KP) {
#unroll u 8
      let p$u = ss[r * CH + j + $u * KP];
      let v$u = kv4(true, offs[j + $u * KP], c);
#end
#unroll u 8
      acc += select(vec4f(), p$u * v$u, p$u > 0.0);
#end
    }
    if (j + 3u * KP < nk) {
#unroll u 4
      let p$u = ss[r * CH + j + $u * KP];
      let v$u = kv4(true, offs[j + $u * KP], c);
#end
#unroll u 4
      acc += select(vec4f(), p$u * v$u, p$u > 0.0);
#end
      j += 4u * KP;
    }
    for (; j < nk; j += KP) {
      let pk = ss[r * CH + j];
      acc += select(vec4f(), pk * kv4(true, offs[j], c), pk > 0.0);
    }
  }
  if (KP > 1u) {
    if (kp < KP) { pv[tid] = acc; }
    workgroupBarrier();
    if (kp == 0u) {
      for (var i = 1u; i < KP; i++) { acc += pv[i * RC + tid]; }
    }
  }
  if (kp != 0u) { return; }

  let t = r / p.g;
  let h = hk * p.g + r % p.g;
  let lsum = rowl[r];
  // lsum >= 1 whenever a key was visible (the row maximum contributes exp(0)).
  let inv = select(0.0, 1.0 / max(lsum, 1.0), lsum > 0.0);
  let ob = (((split * p.batch + b) * p.t + t) * p.hq + h) * D;
  for (var e = 0u; e < 4u; e++) {
    if (4u * c + e < D) { o[ob + 4u * c + e] = acc[e] * inv; }
  }
  if (c == 0u) {
    lse[((split * p.batch + b) * p.hq + h) * p.t + t] =
      select(NEG, rowm[r] + log(lsum), lsum > 0.0);
  }
}
