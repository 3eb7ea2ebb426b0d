import { gpu } from "../../gpu/mod.ts";

/**
 * Workgroup counts covering `n` items at `perGroup` items per workgroup, folded into 2-D when one
 * dimension would exceed maxComputeWorkgroupsPerDimension. Shaders rebuild the flat index with
 * `(wid.y * nwg.x + wid.x)`.
 */
export function grid1d(n: number, perGroup: number): [number, number] {
  const groups = Math.ceil(n / perGroup);
  const max = gpu().limits.maxComputeWorkgroupsPerDimension;
  if (groups <= max) return [groups, 1];
  const y = Math.ceil(groups / max);
  return [Math.ceil(groups / y), y];
}

/**
 * Workgroup size for kernels that give one workgroup to each row: about four elements per
 * invocation, a power of two in [32, 256]. Short rows (hidden 64, a tiny vocabulary) then do not
 * leave most invocations idle at every barrier, which dominates on CPU adapters.
 */
export function rowWorkgroupSize(cols: number): number {
  let wg = 32;
  while (wg < 256 && wg * 4 < cols) wg *= 2;
  return wg;
}

/** `defines` that specialise a row kernel's `const WG` for rows of `cols` elements. */
export function rowDefines(cols: number): { WG: number } {
  return { WG: rowWorkgroupSize(cols) };
}

/**
 * `defines` of kernels that give TPR invocations to each row and several rows to a workgroup
 * (attention_gemm_rows.wgsl): TPR a power of two near cols / 16 (32 to 256), WG at least 128.
 * One H100, 0.5B update (384 keys): a workgroup of 128 to each row took 23.0 ms (softmax) and
 * 19.0 ms (its gradient), four rows to one 17.9 and 18.1 ms. Its grid: grid1d(rows, WG / TPR).
 */
export function multiRowDefines(cols: number): { WG: number; TPR: number } {
  let tpr = 32;
  while (tpr < 256 && tpr * 16 < cols) tpr *= 2;
  return { WG: Math.max(tpr, 128), TPR: tpr };
}
