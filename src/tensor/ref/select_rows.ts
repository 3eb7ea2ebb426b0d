/**
 * CPU reference of the row selection (shaders/select_rows.wgsl): out[m] = x[index[m]], zeros
 * where the index is negative or past the last row.
 */

/** x [N, C], index [M] -> [M, C]. */
export function selectRowsRef<A extends Float32Array | Int32Array>(
  x: A,
  index: Int32Array,
  C: number,
): A {
  const N = x.length / C;
  const out = new (x.constructor as { new (n: number): A })(index.length * C); // [M, C]
  for (let m = 0; m < index.length; m++) {
    const src = index[m];
    if (src < 0 || src >= N) continue;
    for (let c = 0; c < C; c++) out[m * C + c] = x[src * C + c];
  }
  return out;
}

/** The inverse of an injective index [M] over N rows: [N], -1 where no entry points. */
export function inverseIndexRef(index: Int32Array, N: number): Int32Array {
  const out = new Int32Array(N).fill(-1);
  index.forEach((src, m) => {
    if (src < 0) return;
    if (src >= N || out[src] !== -1) throw new Error(`inverseIndexRef: index is not injective`);
    out[src] = m;
  });
  return out;
}
