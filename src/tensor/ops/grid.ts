import { gpu } from "../../gpu/device.ts";

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
