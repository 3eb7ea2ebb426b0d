/**
 * CPU reference of the embedding gather and its scatter-add backward. Ids outside [0, V) are
 * clamped to the nearest row, as the GPU kernels do.
 */

function rowOf(id: number, V: number): number {
  return Math.min(Math.max(id, 0), V - 1);
}

/** out [N, C] = table[ids[n]] for ids [N], table [V, C]. */
export function embeddingRef(ids: Int32Array, table: Float32Array, C: number): Float32Array {
  const V = table.length / C;
  const out = new Float32Array(ids.length * C); // [N, C]
  for (let n = 0; n < ids.length; n++) {
    const v = rowOf(ids[n], V);
    for (let c = 0; c < C; c++) out[n * C + c] = table[v * C + c];
  }
  return out;
}

/** Gradient of the table [V, C] given the output gradient [N, C]; repeated ids add up. */
export function embeddingBackwardRef(
  ids: Int32Array,
  grad: Float32Array,
  V: number,
  C: number,
): Float32Array {
  const out = new Float64Array(V * C); // [V, C]
  for (let n = 0; n < ids.length; n++) {
    const v = rowOf(ids[n], V);
    for (let c = 0; c < C; c++) out[v * C + c] += grad[n * C + c];
  }
  return Float32Array.from(out);
}
