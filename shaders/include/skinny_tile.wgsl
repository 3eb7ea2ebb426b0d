// The staged tiles of the skinny GEMMs (matmul_skinny.wgsl, matmul_skinny_qkv.wgsl,
// matmul_skinny_swiglu.wgsl). A workgroup owns BN weight rows and BM rows of x; tiles are read as
// vec4 along K into workgroup memory in [row][k] layout with rows padded by one vec4, and the
// next stage's loads wait in registers (Staged) while the current stage is used.
// The includer declares: WG_X, WG_Y, TM, BK, BN; X4; `p` with fields m and k4; `x`; the workgroup
// tile `ws` of its weights (or its own); W_SEL, what selects the weight rows (a first row or a
// block), and W_SLOT, one slot of its weight tiles; fetch_w(sel, kb, kend, s) -> W_SLOT and
// put_w(buf, s, W_SLOT).

const NT: u32 = WG_X * WG_Y;
const BM: u32 = WG_Y * TM;
const K4: u32 = BK / 4u; // vec4s per tile row
// The includers #unroll a stage's K4 <= 4 vec4s of K as straight-line code (the copies past K4
// compile away): NVIDIA's Vulkan compiler keeps a loop over them as a loop, even of one trip, as it
// did matmul_tile.wgsl's loop over k (bench/README.md).
const RS: u32 = K4 + 1u; // padded tile row stride, in vec4s
const WJ: u32 = BN / WG_X; // weight rows per thread, strided by WG_X
const LX: u32 = (BM * K4 + NT - 1u) / NT; // x tile slots per thread (at most 4)
const LW: u32 = (BN * K4 + NT - 1u) / NT; // slots per thread of each weight tile (at most 4)

// Shared tiles are indexed [buffer][i][thread][k]: row i * WG_Y + ty of x (i * WG_X + tx of a
// weight), vec4 k of the stage. The same memory as one [buffer][row][k] array, but WebGPU clamps
// every runtime array index into range: split this way the written-out k and the register index
// i are constants, so a thread's shared reads share one clamped index (its ty or tx) and their
// offsets fold into the loads, where one flat index needed its own clamp per read. Reads of
// registers or k a tile lacks (i >= TM, TN = 4's i >= 4, k >= K4) sit in dead branches but must
// still index in range: they take i % TM, i % WJ or k % K4.
var<workgroup> xs: array<array<array<array<vec4<f32>, RS>, WG_Y>, TM>, 2>;
alias WTile = array<array<array<array<vec4<f32>, RS>, WG_X>, WJ>, 2>;

// Slot s of a tile of x: consecutive slots walk along K, so K4 threads read one row's contiguous
// 16 * K4 bytes. Rows past the matrix, K past kend and slots past the tile read as zero (from a
// clamped index, branch-free).
fn fetch_x(m0: u32, kb: u32, kend: u32, s: u32) -> vec4<f32> {
  let i = m0 + s / K4;
  let kk = kb + s % K4;
  let ok = s < BM * K4 && i < p.m && kk < kend;
  return select(vec4<f32>(0.0), vec4<f32>(x[select(0u, i * p.k4 + kk, ok)]), ok);
}

// The next stage's tile slots of this thread (LX, LW <= 4), as named registers: a register
// array indexed in a loop ends up in slow local memory on this toolchain.
struct Staged {
  x0: vec4<f32>,
  x1: vec4<f32>,
  x2: vec4<f32>,
  x3: vec4<f32>,
  w0: W_SLOT,
  w1: W_SLOT,
  w2: W_SLOT,
  w3: W_SLOT,
}

fn fetch(m0: u32, sel: W_SEL, kb: u32, kend: u32, tid: u32) -> Staged {
  var r: Staged;
  r.x0 = fetch_x(m0, kb, kend, tid);
  if (LX > 1u) { r.x1 = fetch_x(m0, kb, kend, tid + NT); }
  if (LX > 2u) { r.x2 = fetch_x(m0, kb, kend, tid + 2u * NT); }
  if (LX > 3u) { r.x3 = fetch_x(m0, kb, kend, tid + 3u * NT); }
  r.w0 = fetch_w(sel, kb, kend, tid);
  if (LW > 1u) { r.w1 = fetch_w(sel, kb, kend, tid + NT); }
  if (LW > 2u) { r.w2 = fetch_w(sel, kb, kend, tid + 2u * NT); }
  if (LW > 3u) { r.w3 = fetch_w(sel, kb, kend, tid + 3u * NT); }
  return r;
}

fn put_x(buf: u32, s: u32, v: vec4<f32>) {
  let r = s / K4;
  if (s < BM * K4) { xs[buf][r / WG_Y][r % WG_Y][s % K4] = v; }
}

fn put(buf: u32, tid: u32, r: Staged) {
  put_x(buf, tid, r.x0);
  if (LX > 1u) { put_x(buf, tid + NT, r.x1); }
  if (LX > 2u) { put_x(buf, tid + 2u * NT, r.x2); }
  if (LX > 3u) { put_x(buf, tid + 3u * NT, r.x3); }
  put_w(buf, tid, r.w0);
  if (LW > 1u) { put_w(buf, tid + NT, r.w1); }
  if (LW > 2u) { put_w(buf, tid + 2u * NT, r.w2); }
  if (LW > 3u) { put_w(buf, tid + 3u * NT, r.w3); }
}

// acc + (x . w0, x . w1, x . w2, x . w3), as four multiply-adds of the transposed w: 16 fused
// multiply-adds where four dot products would take 16 plus the four adds into acc.
fn mac(acc: vec4<f32>, x: vec4<f32>, w0: vec4<f32>, w1: vec4<f32>, w2: vec4<f32>,
       w3: vec4<f32>) -> vec4<f32> {
  var s = fma(vec4<f32>(x.x), vec4<f32>(w0.x, w1.x, w2.x, w3.x), acc);
  s = fma(vec4<f32>(x.y), vec4<f32>(w0.y, w1.y, w2.y, w3.y), s);
  s = fma(vec4<f32>(x.z), vec4<f32>(w0.z, w1.z, w2.z, w3.z), s);
  return fma(vec4<f32>(x.w), vec4<f32>(w0.w, w1.w, w2.w, w3.w), s);
}
