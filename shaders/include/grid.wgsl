// Indices of grids made by grid1d (src/tensor/ops/grid.ts), which folds a 1-D grid into 2-D when
// one dimension would exceed maxComputeWorkgroupsPerDimension. Needs the includer's WG.

// Index of the workgroup (one row per workgroup: grid1d(rows, 1)).
fn flat_group(wid: vec3u, nwg: vec3u) -> u32 {
  return wid.y * nwg.x + wid.x;
}

// Index of the invocation (one element per invocation: grid1d(n, WG)).
fn flat_index(wid: vec3u, nwg: vec3u, lid: vec3u) -> u32 {
  return flat_group(wid, nwg) * WG + lid.x;
}
