// Elementwise kernels: broadcasting binary ops and their input gradients, unary and scalar ops
// whose gradients are computed from the input (so nothing but the inputs has to be saved), a
// broadcast-expand and dtype casts.
//
// The op is chosen by `const OP` (and the gradient side by `const SIDE`), specialised from TS, so
// every op is its own pipeline with the branch folded away. Entry points bind different buffers;
// a binding number may appear twice in this file but never twice in one entry point.
//
// Broadcasting: the TS side merges adjacent dims that index both inputs the same way, so `rank`
// is small, and gives each input a stride per output dim (0 where the input is broadcast).
// rank 0 marks the common case of two inputs with the output's own shape (no index arithmetic).

#include "grid.wgsl"
#include "sigmoid.wgsl"

alias T = f32;
alias TI = f32;
alias TO = f32;
const OP: u32 = 0u;
const SIDE: u32 = 0u;
// cast_main to f16: a value past f16's range after rounding (|x| >= 65520) becomes +-inf (mp.s
// holds inf) as an IEEE conversion gives it; WGSL leaves an out-of-range conversion undefined.
const HALF_OUT: bool = false;
#const WG: u32

struct BcastParams {
  n: u32,
  rank: u32,
  s: f32,
  _p0: u32,
  shape: array<vec4u, 2>,
  sa: array<vec4u, 2>,
  sb: array<vec4u, 2>,
}

struct MapParams {
  n: u32,
  s: f32,
  _p0: u32,
  _p1: u32,
}

@group(0) @binding(0) var<uniform> bp: BcastParams;
@group(0) @binding(0) var<uniform> mp: MapParams;
@group(0) @binding(1) var<storage, read> a: array<T>;
@group(0) @binding(2) var<storage, read> b: array<T>;
@group(0) @binding(3) var<storage, read_write> out: array<T>;
@group(0) @binding(4) var<storage, read> g: array<T>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;
@group(0) @binding(1) var<storage, read> cin: array<TI>;
@group(0) @binding(2) var<storage, read_write> cout: array<TO>;

// Offsets into a and b of output element i.
fn offsets(i: u32) -> vec2u {
  if (bp.rank == 0u) { return vec2u(i, i); }
  var rem = i;
  var oa = 0u;
  var ob = 0u;
  for (var d = bp.rank; d > 0u; d--) {
    let k = d - 1u;
    let size = bp.shape[k >> 2u][k & 3u];
    let c = rem % size;
    rem = rem / size;
    oa += c * bp.sa[k >> 2u][k & 3u];
    ob += c * bp.sb[k >> 2u][k & 3u];
  }
  return vec2u(oa, ob);
}

fn binary(x: T, z: T) -> T {
  switch OP {
    case 0u: { return x + z; }
    case 1u: { return x - z; }
    case 2u: { return x * z; }
    case 3u: { return x / z; }
    case 4u: { return select(z, x, x >= z); }
    default: { return select(z, x, x <= z); }
  }
}

// d binary / d x (SIDE 0) or d binary / d z (SIDE 1). Ties of maximum/minimum split the gradient
// evenly between the inputs, as PyTorch does.
fn binary_grad(x: T, z: T) -> T {
  let first = SIDE == 0u;
  switch OP {
    case 0u: { return T(1); }
    case 1u: { return select(T(-1), T(1), first); }
    case 2u: { return select(x, z, first); }
    case 3u: { return select(-x / (z * z), T(1) / z, first); }
    case 4u: {
      if (x == z) { return T(0.5); }
      return select(T(0), T(1), (x > z) == first);
    }
    default: {
      if (x == z) { return T(0.5); }
      return select(T(0), T(1), (x < z) == first);
    }
  }
}

// sigmoid.wgsl's, in T (computed in f32).
fn sigmoid_t(x: T) -> T {
  return T(sigmoid(f32(x)));
}

fn tanh_stable(x: T) -> T {
  // exp(2x) may be inf or 0, both give the right limit here (builtin tanh is imprecise on some
  // backends for large |x|).
  return T(1) - T(2) / (exp(T(2) * x) + T(1));
}

// x^p with WGSL's pow (defined for x >= 0 only) extended to integer powers of negatives.
fn pow_scalar(x: T, p: T) -> T {
  if (p == T(0)) { return T(1); }
  if (p == T(1)) { return x; }
  if (p == T(2)) { return x * x; }
  if (x < T(0) && fract(p) == T(0)) {
    let r = pow(-x, p);
    return select(r, -r, fract(p * T(0.5)) != T(0));
  }
  return pow(x, p);
}

fn unary(x: T, s: T) -> T {
  switch OP {
    case 0u: { return -x; }
    case 1u: { return exp(x); }
    case 2u: { return log(x); }
    case 3u: { return sqrt(x); }
    case 4u: { return inverseSqrt(x); }
    case 5u: { return x * x; }
    case 6u: { return abs(x); }
    case 7u: { return sigmoid_t(x); }
    case 8u: { return x * sigmoid_t(x); }
    case 9u: { return tanh_stable(x); }
    case 10u: { return max(x, T(0)); }
    case 11u: { return x + s; }
    case 12u: { return x * s; }
    default: { return pow_scalar(x, s); }
  }
}

// d unary / dx, from x alone.
fn unary_grad(x: T, s: T) -> T {
  switch OP {
    case 0u: { return T(-1); }
    case 1u: { return exp(x); }
    case 2u: { return T(1) / x; }
    case 3u: { return T(0.5) / sqrt(x); }
    case 4u: { return T(-0.5) * inverseSqrt(x) / x; }
    case 5u: { return T(2) * x; }
    case 6u: { return sign(x); }
    case 7u: {
      let sg = sigmoid_t(x);
      return sg * (T(1) - sg);
    }
    case 8u: {
      let sg = sigmoid_t(x);
      return sg * (T(1) + x * (T(1) - sg));
    }
    case 9u: {
      let t = tanh_stable(x);
      return T(1) - t * t;
    }
    case 10u: { return select(T(0), T(1), x > T(0)); }
    case 11u: { return T(1); }
    case 12u: { return s; }
    default: { return s * pow_scalar(x, s - T(1)); }
  }
}

@compute @workgroup_size(WG)
fn binary_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= bp.n) { return; }
  let o = offsets(i);
  out[i] = binary(a[o.x], b[o.y]);
}

// Gradient of one input at output resolution: g * d op / d input. The TS side then sums it down
// to the input's shape.
@compute @workgroup_size(WG)
fn binary_grad_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                    @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= bp.n) { return; }
  let o = offsets(i);
  out[i] = g[i] * binary_grad(a[o.x], b[o.y]);
}

// y = s * a broadcast to the output shape (only the strides of a are used).
@compute @workgroup_size(WG)
fn expand_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= bp.n) { return; }
  y[i] = T(bp.s) * a[offsets(i).x];
}

@compute @workgroup_size(WG)
fn unary_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= mp.n) { return; }
  y[i] = unary(a[i], T(mp.s));
}

// Bindings: x (1), upstream gradient (2), dx (3).
@compute @workgroup_size(WG)
fn unary_grad_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                   @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= mp.n) { return; }
  out[i] = b[i] * unary_grad(a[i], T(mp.s));
}

@compute @workgroup_size(WG)
fn cast_main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
             @builtin(local_invocation_id) lid: vec3u) {
  let i = flat_index(wid, nwg, lid);
  if (i >= mp.n) { return; }
  var v = cin[i];
  if (HALF_OUT && abs(f32(v)) >= 65520.0) { v = TI(sign(f32(v)) * mp.s); }
  cout[i] = TO(v);
}
