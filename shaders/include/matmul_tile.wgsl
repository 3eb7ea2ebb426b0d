// The tiled GEMM of matmul.wgsl without its operands: tile constants, workgroup tiles, the
// K loop over one BM x BN block, the stores and the four epilogue entry points (main, main_bias,
// main_resid, main_bias_resid). Shared with matmul_cat.wgsl, whose K runs over two products.
// The includer declares `p` (Params with m, n, k, stride_a, stride_b, stride_c, batch_offset,
// k_split, m_off, n_off) at binding 0, its operands at bindings 1, 2 (and past 5; `a` and `b` are
// arrays of A_V / B_V, which hold A_T / B_T or vec4s of them), and load_a(base, i, kk, k_end) /
// load_b(base, kk, j, k_end): element (i, kk) of op(A) / (kk, j) of op(B), 0 outside;
// and load4_a / load4_b (same arguments): four elements in one vec4 read, along the operand's
// contiguous dimension (op(A)'s (i, kk..kk+3) when A is stored along k, else (i..i+3, kk); op(B)'s
// (kk..kk+3, j) when B is stored along k, else (kk, j..j+3)), 0 outside, used when VEC_A / VEC_B.

#const WG_X: u32 // threads along N
#const WG_Y: u32 // threads along M
#const TM: u32 // rows per thread: 4 or 8
#const TN: u32 // columns per thread: 4 or 8
#const BK: u32 // K step held in workgroup memory: 8, the k steps written out below
#const TRANS_A: bool
#const TRANS_B: bool
// Operands read four elements at a time (one 16- or 8-byte load instead of four), which the TS
// side sets where the contiguous dimension and the batch stride are multiples of 4. On an H100 the
// block ran 4096^3 at 37.4 TFLOP/s with them against 32.5 with scalar reads (bench/README.md).
const VEC_A: bool = false;
const VEC_B: bool = false;
// M, N and K multiples of BM, BN and BK: every block and K step is whole, so the includer's loads
// of A / B may drop their bounds checks (the TS side sets each per layout, by measurement: on an
// H100 at 4096^3 x @ W^T ran 43.0 TFLOP/s with both dropped against 38.1, bench/README.md).
const EXACT_A: bool = false;
const EXACT_B: bool = false;
// Where the next K step's global reads are issued: before the current stage's first k step (0) or
// its fifth (1). Same values either way; NVIDIA's compiler schedules each layout best with its own
// (the TS side's `tileForms`, measured). Chosen by #if, so a pipeline holds one copy of the
// reads: one dead copy behind a constant test made the tests' compiles on CPU adapters 4x slower.
#const FETCH_HALF: u32
// Causal attention's products (matmul.wgsl only, whose Params carry causal_t and causal_off): row
// i of op(A) is query position t = i % causal_t, which sees keys up to causal_off + t. 1: C is the
// scores [rows, keys], and a block whose every key is beyond its rows' reach is not computed (the
// row kernels never read it); 2: K runs over keys ([rows, keys] @ [keys, D]) and stops at the
// block rows' reach; 3: the output rows are keys and K runs over one head's T query rows
// ([rows, keys]^T @ [rows, D]), starting at the first position that sees the block's first key.
// Skipped terms are products with exact zeros (P and dS are 0 past a row's reach).
#const CAUSAL: u32
alias BIAS_T = f32;
// A dispatch may cover only the blocks from row m_off and column n_off on (multiples of BM and
// BN): a product's last, partly filled wave of blocks then runs as a split-K dispatch of its own
// (the TS side's `splitPlan`). Its output C holds just those rows and columns, rows of
// n - n_off; bounds stay checked against m and n. Only such dispatches set OFFSETS: the others
// compile without reading the offsets.
const OFFSETS: bool = false;

const NT: u32 = WG_X * WG_Y;
const RG: u32 = TM / 4u; // vec4 row groups per thread
const CG: u32 = TN / 4u; // vec4 column groups per thread
const BM: u32 = WG_Y * TM;
const BN: u32 = WG_X * TN;
const AS_STRIDE: u32 = BM / 4u + 1u; // vec4s per k row of As, padded
const BS_STRIDE: u32 = BN / 4u + 1u;
const LA: u32 = BM * BK / 4u / NT; // vec4 slots of the A tile each thread loads (at most 4)
const LB: u32 = BN * BK / 4u / NT;
const KC: u32 = BK / 4u; // vec4s along k of one tile row, for operands read along k

@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<BIAS_T>;
@group(0) @binding(5) var<storage, read> resid: array<f32>;

// Array element e of A / B as f32s: a splat of one value, or one vec4 (the same code types
// either way; only the form that VEC_A / VEC_B selects runs).
fn a_at(e: u32) -> vec4<f32> {
  return vec4<f32>(vec4<A_T>(a[e]));
}

fn b_at(e: u32) -> vec4<f32> {
  return vec4<f32>(vec4<B_T>(b[e]));
}

// [buffer][k][m/4 + pad] and [buffer][k][n/4 + pad]. Indexed by three levels, not one flat index:
// WebGPU clamps each runtime array index into range, and here the k level is a constant in the
// written-out steps and the buffer level one value per K step, so the inner loop's shared reads
// share one clamped column per thread and take their k offsets as constants.
var<workgroup> As: array<array<array<vec4<f32>, AS_STRIDE>, BK>, 2>;
var<workgroup> Bs: array<array<array<vec4<f32>, BS_STRIDE>, BK>, 2>;

// Slot s of a tile with `groups` vec4 groups per k row. When the matrix is contiguous along
// m (or n) consecutive threads take consecutive groups of one k row; when it is contiguous
// along k they take consecutive k of one group, so global reads stay coalesced either way.
fn slot(s: u32, groups: u32, along_k: bool) -> vec2<u32> {
  if (along_k) { return vec2<u32>(s / BK, s % BK); } // (group, k)
  return vec2<u32>(s % groups, s / groups);
}

// Vec4 reads along k: slot s holds tile row s / KC at k (s % KC) * 4 .. + 3. Two threads read
// one row's 8 k, so a warp's reads are 16 rows' whole 32-byte pieces.
fn fetch_a(base: u32, m0: u32, k0: u32, s: u32, ke: u32) -> vec4<f32> {
  if (VEC_A && !TRANS_A) { return load4_a(base, m0 + s / KC, k0 + (s % KC) * 4u, ke); }
  let g = slot(s, BM / 4u, !TRANS_A);
  let i = m0 + g.x * 4u;
  let kk = k0 + g.y;
  if (VEC_A) { return load4_a(base, i, kk, ke); }
  return vec4<f32>(load_a(base, i, kk, ke), load_a(base, i + 1u, kk, ke),
                   load_a(base, i + 2u, kk, ke), load_a(base, i + 3u, kk, ke));
}

fn fetch_b(base: u32, n0: u32, k0: u32, s: u32, ke: u32) -> vec4<f32> {
  if (VEC_B && TRANS_B) { return load4_b(base, k0 + (s % KC) * 4u, n0 + s / KC, ke); }
  let g = slot(s, BN / 4u, TRANS_B);
  let j = n0 + g.x * 4u;
  let kk = k0 + g.y;
  if (VEC_B) { return load4_b(base, kk, j, ke); }
  return vec4<f32>(load_b(base, kk, j, ke), load_b(base, kk, j + 1u, ke),
                   load_b(base, kk, j + 2u, ke), load_b(base, kk, j + 3u, ke));
}

// A vec4 read along k holds one row's four k: its values go to four k rows of the k-major tile,
// one component each (the 32 threads of a warp hit 32 distinct banks).
fn put_a(buf: u32, s: u32, v: vec4<f32>) {
  if (VEC_A && !TRANS_A) {
    let r = s / KC;
    let k = (s % KC) * 4u;
    As[buf][k][r / 4u][r % 4u] = v.x;
    As[buf][k + 1u][r / 4u][r % 4u] = v.y;
    As[buf][k + 2u][r / 4u][r % 4u] = v.z;
    As[buf][k + 3u][r / 4u][r % 4u] = v.w;
    return;
  }
  let g = slot(s, BM / 4u, !TRANS_A);
  As[buf][g.y][g.x] = v;
}

fn put_b(buf: u32, s: u32, v: vec4<f32>) {
  if (VEC_B && TRANS_B) {
    let r = s / KC;
    let k = (s % KC) * 4u;
    Bs[buf][k][r / 4u][r % 4u] = v.x;
    Bs[buf][k + 1u][r / 4u][r % 4u] = v.y;
    Bs[buf][k + 2u][r / 4u][r % 4u] = v.z;
    Bs[buf][k + 3u][r / 4u][r % 4u] = v.w;
    return;
  }
  let g = slot(s, BN / 4u, TRANS_B);
  Bs[buf][g.y][g.x] = v;
}

fn m_off() -> u32 {
  if (OFFSETS) { return p.m_off; }
  return 0u;
}

fn n_off() -> u32 {
  if (OFFSETS) { return p.n_off; }
  return 0u;
}

// The BM x BN block (wid.x, wid.y) of batch entry wid.z, as this thread's register tile:
// element [row * 2 + h] holds row `row` (0..TM) and column group h. The tile, the staged loads
// and the k steps are written out with #unroll into named registers and straight-line code:
// NVIDIA's Vulkan compiler kept the former loops over k and over a register array as loops
// (4096^3 on an H100: 23.6 TFLOP/s against 29.8 written out, bench/README.md), and a
// dynamically indexed register array compiles to slow indirect code (very slowly compiled on CPU
// adapters).
fn block(wid: vec3<u32>, lid: vec3<u32>) -> array<vec4<f32>, 16> {
  let tid = lid.y * WG_X + lid.x;
  let split = p.k_split < p.k;
  let batch = select(wid.z + p.batch_offset, 0u, split);
  var k_lo = select(0u, wid.z * p.k_split, split);
  var k_hi = select(p.k, min(p.k, k_lo + p.k_split), split);
  let a_base = batch * p.stride_a;
  let b_base = batch * p.stride_b;
  let m0 = m_off() + wid.y * BM;
  let n0 = n_off() + wid.x * BN;
  // A causal K range starts and ends at multiples of BK (aligned reads, whole stages).
#if CAUSAL == 2
  let reach = u32(max(causal_reach(m0) + 1, 0));
  k_hi = max(k_lo, min(k_hi, (reach + BK - 1u) / BK * BK));
#endif
#if CAUSAL == 3
  k_lo = min(k_hi, max(k_lo, u32(max(i32(m0) - p.causal_off, 0)) / BK * BK));
#endif
  let tiles = (k_hi - k_lo + BK - 1u) / BK;
#unroll i 16
  var acc$i = vec4<f32>(0.0);
#end
  // This thread's slots of the next K step's tiles (LA, LB <= 4).
#unroll l 4
  var pa$l = vec4<f32>(0.0);
  var pb$l = vec4<f32>(0.0);
  if ($l < LA) { pa$l = fetch_a(a_base, m0, k_lo, tid + $l * NT, k_hi); }
  if ($l < LB) { pb$l = fetch_b(b_base, n0, k_lo, tid + $l * NT, k_hi); }
  if ($l < LA) { put_a(0u, tid + $l * NT, pa$l); }
  if ($l < LB) { put_b(0u, tid + $l * NT, pb$l); }
#end
  workgroupBarrier();

  for (var t = 0u; t < tiles; t++) {
    let cur = t % 2u;
    let more = t + 1u < tiles;
    let k0 = k_lo + (t + 1u) * BK;
    // The stage's 8 k steps as straight-line code: inside even a loop of one trip NVIDIA's
    // Vulkan compiler scheduled them worse (28.4 against 31.3 TFLOP/s at 4096^3 on an H100).
    {
#unroll h 2
#if FETCH_HALF == $h
      if (more) {
#unroll l 4
        if ($l < LA) { pa$l = fetch_a(a_base, m0, k0, tid + $l * NT, k_hi); }
        if ($l < LB) { pb$l = fetch_b(b_base, n0, k0, tid + $l * NT, k_hi); }
#end
      }
#endif
#unroll s 4
      {
        let a0 = As[cur][$h * 4 + $s][lid.y];
        let b0 = Bs[cur][$h * 4 + $s][lid.x];
        var a1 = vec4<f32>(0.0);
        var b1 = vec4<f32>(0.0);
        if (RG > 1u) { a1 = As[cur][$h * 4 + $s][lid.y + WG_Y]; }
        if (CG > 1u) { b1 = Bs[cur][$h * 4 + $s][lid.x + WG_X]; }
        acc0 = fma(vec4<f32>(a0.x), b0, acc0);
        acc2 = fma(vec4<f32>(a0.y), b0, acc2);
        acc4 = fma(vec4<f32>(a0.z), b0, acc4);
        acc6 = fma(vec4<f32>(a0.w), b0, acc6);
        if (CG > 1u) {
          acc1 = fma(vec4<f32>(a0.x), b1, acc1);
          acc3 = fma(vec4<f32>(a0.y), b1, acc3);
          acc5 = fma(vec4<f32>(a0.z), b1, acc5);
          acc7 = fma(vec4<f32>(a0.w), b1, acc7);
        }
        if (RG > 1u) {
          acc8 = fma(vec4<f32>(a1.x), b0, acc8);
          acc10 = fma(vec4<f32>(a1.y), b0, acc10);
          acc12 = fma(vec4<f32>(a1.z), b0, acc12);
          acc14 = fma(vec4<f32>(a1.w), b0, acc14);
        }
        if (RG > 1u && CG > 1u) {
          acc9 = fma(vec4<f32>(a1.x), b1, acc9);
          acc11 = fma(vec4<f32>(a1.y), b1, acc11);
          acc13 = fma(vec4<f32>(a1.z), b1, acc13);
          acc15 = fma(vec4<f32>(a1.w), b1, acc15);
        }
      }
#end
#end
    }
    if (more) {
      let nxt = 1u - cur;
#unroll l 4
      if ($l < LA) { put_a(nxt, tid + $l * NT, pa$l); }
      if ($l < LB) { put_b(nxt, tid + $l * NT, pb$l); }
#end
    }
    workgroupBarrier();
  }
  return array<vec4<f32>, 16>(acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7, acc8, acc9, acc10,
                              acc11, acc12, acc13, acc14, acc15);
}

// Element (i, j) of the product at C's index c_base + out_index(i, j).
fn out_index(i: u32, j: u32) -> u32 {
  if (OFFSETS) { return (i - p.m_off) * (p.n - p.n_off) + (j - p.n_off); }
  return i * p.n + j;
}

fn store4(c_base: u32, i: u32, j: u32, v: vec4<f32>) {
  let at = c_base + out_index(i, j);
  if (j < p.n) { c[at] = v.x; }
  if (j + 1u < p.n) { c[at + 1u] = v.y; }
  if (j + 2u < p.n) { c[at + 2u] = v.z; }
  if (j + 3u < p.n) { c[at + 3u] = v.w; }
}

// Writes rows i .. i+3 from acc[q], acc[q + 2], ... (two column groups each), adding bias.
fn store_rows(c_base: u32, i: u32, j0: u32, j1: u32, r0: vec4<f32>, r1: vec4<f32>,
              r2: vec4<f32>, r3: vec4<f32>, bias0: vec4<f32>) {
  if (i < p.m) { store4(c_base, i, j0, r0 + bias0); }
  if (i + 1u < p.m) { store4(c_base, i + 1u, j0, r1 + bias0); }
  if (i + 2u < p.m) { store4(c_base, i + 2u, j0, r2 + bias0); }
  if (i + 3u < p.m) { store4(c_base, i + 3u, j0, r3 + bias0); }
}

fn store(wid: vec3<u32>, lid: vec3<u32>, acc: array<vec4<f32>, 16>, bias0: vec4<f32>,
         bias1: vec4<f32>) {
  let c_base = (wid.z + p.batch_offset) * p.stride_c;
  let i0 = m_off() + wid.y * BM + lid.y * 4u;
  let i1 = i0 + WG_Y * 4u;
  let j0 = n_off() + wid.x * BN + lid.x * 4u;
  let j1 = j0 + WG_X * 4u;
  store_rows(c_base, i0, j0, j1, acc[0], acc[2], acc[4], acc[6], bias0);
  if (CG > 1u) { store_rows(c_base, i0, j1, j1, acc[1], acc[3], acc[5], acc[7], bias1); }
  if (RG > 1u) {
    store_rows(c_base, i1, j0, j1, acc[8], acc[10], acc[12], acc[14], bias0);
    if (CG > 1u) { store_rows(c_base, i1, j1, j1, acc[9], acc[11], acc[13], acc[15], bias1); }
  }
}

#if CAUSAL != 0
// The last key that the query rows m0 .. m0 + BM - 1 see (they may wrap into the next head).
fn causal_reach(m0: u32) -> i32 {
  let t0 = m0 % p.causal_t;
  return p.causal_off + i32(select(p.causal_t - 1u, t0 + BM - 1u, t0 + BM <= p.causal_t));
}
#endif

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
#if CAUSAL == 1
  if (i32(n_off() + wid.x * BN) > causal_reach(m_off() + wid.y * BM)) { return; }
#endif
  store(wid, lid, block(wid, lid), vec4<f32>(0.0), vec4<f32>(0.0));
}

fn bias4(j: u32) -> vec4<f32> {
  let n1 = p.n - 1u;
  return select(vec4<f32>(0.0),
                vec4<f32>(f32(bias[min(j, n1)]), f32(bias[min(j + 1u, n1)]),
                          f32(bias[min(j + 2u, n1)]), f32(bias[min(j + 3u, n1)])),
                vec4<bool>(j < p.n, j + 1u < p.n, j + 2u < p.n, j + 3u < p.n));
}

// C = op(A) @ op(B) + bias[n] (the linear layer's forward); `main` must not touch `bias`, or
// its auto layout would require the binding.
@compute @workgroup_size(WG_X, WG_Y)
fn main_bias(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let j0 = n_off() + wid.x * BN + lid.x * 4u;
  store(wid, lid, block(wid, lid), bias4(j0), bias4(j0 + WG_X * 4u));
}

// Columns j .. j+3 of row i of the residual, laid out as C (0 past M or N; clamped reads).
fn resid4(c_base: u32, i: u32, j: u32) -> vec4<f32> {
  let i1 = min(i, p.m - 1u);
  let n1 = p.n - 1u;
  return select(vec4<f32>(0.0),
                vec4<f32>(resid[c_base + out_index(i1, min(j, n1))],
                          resid[c_base + out_index(i1, min(j + 1u, n1))],
                          resid[c_base + out_index(i1, min(j + 2u, n1))],
                          resid[c_base + out_index(i1, min(j + 3u, n1))]),
                vec4<bool>(j < p.n, j + 1u < p.n, j + 2u < p.n, j + 3u < p.n));
}

// (acc + bias) + resid at this thread's outputs, laid out as `store` reads acc.
fn plus_resid(wid: vec3<u32>, lid: vec3<u32>, acc: array<vec4<f32>, 16>, bias0: vec4<f32>,
              bias1: vec4<f32>) -> array<vec4<f32>, 16> {
  let c_base = (wid.z + p.batch_offset) * p.stride_c;
  let i0 = m_off() + wid.y * BM + lid.y * 4u;
  let i1 = i0 + WG_Y * 4u;
  let j0 = n_off() + wid.x * BN + lid.x * 4u;
  let j1 = j0 + WG_X * 4u;
  var o = acc;
  o[0] = (o[0] + bias0) + resid4(c_base, i0, j0);
  o[2] = (o[2] + bias0) + resid4(c_base, i0 + 1u, j0);
  o[4] = (o[4] + bias0) + resid4(c_base, i0 + 2u, j0);
  o[6] = (o[6] + bias0) + resid4(c_base, i0 + 3u, j0);
  if (CG > 1u) {
    o[1] = (o[1] + bias1) + resid4(c_base, i0, j1);
    o[3] = (o[3] + bias1) + resid4(c_base, i0 + 1u, j1);
    o[5] = (o[5] + bias1) + resid4(c_base, i0 + 2u, j1);
    o[7] = (o[7] + bias1) + resid4(c_base, i0 + 3u, j1);
  }
  if (RG > 1u) {
    o[8] = (o[8] + bias0) + resid4(c_base, i1, j0);
    o[10] = (o[10] + bias0) + resid4(c_base, i1 + 1u, j0);
    o[12] = (o[12] + bias0) + resid4(c_base, i1 + 2u, j0);
    o[14] = (o[14] + bias0) + resid4(c_base, i1 + 3u, j0);
  }
  if (RG > 1u && CG > 1u) {
    o[9] = (o[9] + bias1) + resid4(c_base, i1, j1);
    o[11] = (o[11] + bias1) + resid4(c_base, i1 + 1u, j1);
    o[13] = (o[13] + bias1) + resid4(c_base, i1 + 2u, j1);
    o[15] = (o[15] + bias1) + resid4(c_base, i1 + 3u, j1);
  }
  return o;
}

// C = op(A) @ op(B) + resid (binding 4 unbound); only the *_resid entries read `resid`.
@compute @workgroup_size(WG_X, WG_Y)
fn main_resid(@builtin(workgroup_id) wid: vec3<u32>,
              @builtin(local_invocation_id) lid: vec3<u32>) {
  let zero = vec4<f32>(0.0);
  store(wid, lid, plus_resid(wid, lid, block(wid, lid), zero, zero), zero, zero);
}

// C = (op(A) @ op(B) + bias[n]) + resid.
@compute @workgroup_size(WG_X, WG_Y)
fn main_bias_resid(@builtin(workgroup_id) wid: vec3<u32>,
                   @builtin(local_invocation_id) lid: vec3<u32>) {
  let j0 = n_off() + wid.x * BN + lid.x * 4u;
  let zero = vec4<f32>(0.0);
  let o = plus_resid(wid, lid, block(wid, lid), bias4(j0), bias4(j0 + WG_X * 4u));
  store(wid, lid, o, zero, zero);
}
