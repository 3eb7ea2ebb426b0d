/**
 * CPU reference of RMSNorm (Qwen2/Llama): y = w * (x * rsqrt(mean(x^2) + eps)) per row of C values.
 * Plain loops over Float32Array with f64 accumulation; the GPU kernels are tested against it.
 */

/** Returns y [R, C] and the per-row rstd [R] for x [R, C], w [C]. */
export function rmsNormRef(
  x: Float32Array,
  w: Float32Array,
  eps: number,
): { y: Float32Array; rstd: Float32Array } {
  const C = w.length;
  const R = x.length / C;
  const y = new Float32Array(x.length); // [R, C]
  const rstd = new Float32Array(R); // [R]
  for (let r = 0; r < R; r++) {
    const row = r * C;
    let ss = 0;
    for (let c = 0; c < C; c++) ss += x[row + c] * x[row + c];
    const rs = 1 / Math.sqrt(ss / C + eps);
    rstd[r] = rs;
    for (let c = 0; c < C; c++) y[row + c] = w[c] * (x[row + c] * rs);
  }
  return { y, rstd };
}

/** Gradients of sum(gy * y) for x [R, C] and w [C]. */
export function rmsNormBackwardRef(
  x: Float32Array,
  w: Float32Array,
  gy: Float32Array,
  eps: number,
): { gx: Float32Array; gw: Float32Array } {
  const C = w.length;
  const R = x.length / C;
  const gx = new Float32Array(x.length); // [R, C]
  const gw = new Float64Array(C); // [C], summed over rows
  for (let r = 0; r < R; r++) {
    const row = r * C;
    let ss = 0;
    for (let c = 0; c < C; c++) ss += x[row + c] * x[row + c];
    const rs = 1 / Math.sqrt(ss / C + eps);
    // d rs / d x_k = -rs^3 * x_k / C, so every x_k also feeds back through sum_j(g_j w_j x_j).
    let dot = 0;
    for (let c = 0; c < C; c++) dot += gy[row + c] * w[c] * x[row + c];
    const k = rs * rs * rs * dot / C;
    for (let c = 0; c < C; c++) {
      gx[row + c] = rs * w[c] * gy[row + c] - k * x[row + c];
      gw[c] += gy[row + c] * x[row + c] * rs;
    }
  }
  return { gx, gw: Float32Array.from(gw) };
}
