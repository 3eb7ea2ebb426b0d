/** CPU reference of the global gradient norm and the clip scale. */
export function gradNormRef(
  grads: Float32Array[],
  maxNorm: number,
): { norm: number; scale: number } {
  let s = 0;
  for (const g of grads) for (const v of g) s += v * v;
  const norm = Math.sqrt(s);
  if (!Number.isFinite(norm)) return { norm, scale: 0 };
  const scale = maxNorm > 0 && Number.isFinite(maxNorm) && norm > maxNorm
    ? maxNorm / (norm + 1e-6)
    : 1;
  return { norm, scale };
}
